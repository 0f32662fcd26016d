select l_returnflag, count(distinct l_suppkey) from lineitem group by l_returnflag
----
select count(distinct l_partkey), sum(distinct l_partkey), min(l_partkey), max(distinct l_partkey) from lineitem
----
select p_brand, count(distinct ps_suppkey + 1) as c from partsupp, part where p_partkey = ps_partkey group by p_brand having count(distinct ps_suppkey + 1) > 3
----
select count(distinct l_partkey), count(distinct l_suppkey) from lineitem
----
select count(distinct l_partkey), sum(l_quantity) from lineitem
----
select l_returnflag, array_agg(distinct l_linestatus order by l_linestatus desc) from lineitem group by l_returnflag
----
select array_agg(distinct l_linestatus) filter (where l_quantity > 10) from lineitem
