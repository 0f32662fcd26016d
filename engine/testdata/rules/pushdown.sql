-- comma joins become equi-joins; single-table conjuncts go into scans
select n_name, r_name from nation, region where n_regionkey = r_regionkey and r_name = 'ASIA' and n_nationkey < 10
----
-- through a derived table's projection and below a group by
select * from (select l_orderkey, sum(l_quantity) as q from lineitem group by l_orderkey) t where l_orderkey < 100 and q > 10
----
-- left join: ON conditions on the right go right, WHERE on the left goes left
select c_name from customer left join orders on c_custkey = o_custkey and o_orderstatus = 'F' where c_mktsegment = 'BUILDING'
----
-- an OR across two tables implies an OR on each (Q7)
select n1.n_name from nation n1, nation n2 where (n1.n_name = 'FRANCE' and n2.n_name = 'GERMANY') or (n1.n_name = 'GERMANY' and n2.n_name = 'FRANCE')
----
-- through UNION into both inputs
select * from (select n_nationkey as k from nation union all select r_regionkey from region) u where k = 3
----
-- a semi join moves to the join input it filters (Q18)
select c_name, o_orderkey from customer, orders where c_custkey = o_custkey and o_orderkey in (select l_orderkey from lineitem where l_quantity > 49)
