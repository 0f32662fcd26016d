-- a CTE used once is inlined; used twice it stays shared
with c as (select n_nationkey, n_name from nation where n_regionkey = 1) select * from c
----
with c as (select n_nationkey, n_name from nation where n_regionkey = 1) select a.n_name from c a, c b where a.n_nationkey = b.n_nationkey
