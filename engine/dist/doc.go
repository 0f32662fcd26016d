// Package dist cuts a physical plan into stages at exchanges and runs a
// stage's fragment on a worker.
//
//	PlanDistributed (dist.go)  *phys.PhysPlan -> *DistPlan: stages cut at
//	                           exchanges (network gather, hash repartition
//	                           with partial/final aggregates, broadcast or
//	                           replicated build sides, repartitioned joins,
//	                           scans split by key range on clustered
//	                           columns for joins and aggregates in place,
//	                           build sides sent by range to such a split
//	                           probe (exec.ExchangeRange, D72);
//	                           one worker: the embedded plan, one task)
//	DistPlan.Fragments         one Fragment per task (JSON, shipped)
//	RunFragment (exec.go)      runs a fragment: scans from a Source,
//	                           PhysRemote from shuffle receivers, output to
//	                           shuffle senders or the coordinator
//	RunDistributedLocal        a distributed plan in one process (local.go,
//	                           tests)
//	DistPlan.KeyFilters        join key filters whose join and probe scan
//	                           are in different stages: parts from the
//	                           join's tasks, merged by a FilterRelay (the
//	                           coordinator), applied by the scan's tasks
//	                           (TaskFilters; filters.go)
//	Adapt (adaptive.go)        adaptive execution: the build sides whose
//	                           size decides the plan run first, in waves of
//	                           held stages (their output kept where it was
//	                           computed: HeldStore, held.go); the rest is
//	                           planned again with the real sizes; a
//	                           skewed join task is split (skew.go), a
//	                           repartitioned stage whose inputs proved
//	                           small runs as fewer tasks (coalesce.go)
//	ExplainDistributed         stages [+ EXPLAIN ANALYZE task reports]
//
// INVARIANT: a node the embedded plan ran as one stream runs in one task
// with one stream in a distributed plan (filters, projections and hash
// joins excepted: their rows do not depend on how the input is split, and
// the first node above that needs one stream gathers); a shared subplan
// sits in exactly one stage (Stage.Shared), the one-task stage holding all
// its readers, or is planned again at each reader; a hash exchange across
// the network has Workers x Parallelism receivers and uses
// exec.HashPartitioner over all of them; two sides of a co-located join
// are distributed on their join keys over the same receivers, or split by
// value range on them at the same bounds (RangePart.Same), every part of a
// range split read by exactly one task with the part's bounds in its scan
// filter; a range exchange (StageOut.Cuts) carries its consumer's range
// split's bounds, with one receiver per consumer task (task t receives
// part t), into a stage of exactly that split's parts as tasks (never
// coalesced or skew-split). A held output is read by one task per part, on the node holding
// the part (DistPlan.HeldNode), in a stage of its own; it is taken once and
// is visible only once its task ended without error; what passes the
// store's memory limit is spilled in order to a file the reader removes;
// a wave's failure for want of room (spilling off, a full disk) runs the
// static plan instead. A coalesced stage
// (Stage.Coalesced) keeps its planned hash partitions: every exchange into
// it sends planned task t's partitions to task Coalesced[t] (contiguous
// groups of whole planned tasks, the grain at which its inputs are
// co-located), and it reads no held output, no scan but replicated ones,
// and is never also skew-split.
//
// Dependencies: dist imports phys, exec, shuffle and storage; never plan's
// rewriters, bind or opt.
package dist
