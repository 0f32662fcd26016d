-- TPC-H Q5's six relations
select n_name, sum(l_extendedprice) from customer, orders, lineitem, supplier, nation, region where c_custkey = o_custkey and l_orderkey = o_orderkey and l_suppkey = s_suppkey and c_nationkey = s_nationkey and s_nationkey = n_nationkey and n_regionkey = r_regionkey and r_name = 'ASIA' group by n_name
----
-- a cross product only where nothing connects the inputs
select count(*) from region, nation, supplier where n_nationkey = s_nationkey
----
-- outer joins keep their sides and build on the smaller input
select c_custkey, count(o_orderkey) from customer left join orders on c_custkey = o_custkey group by c_custkey
----
-- equalities implied by transitivity join relations the query did not connect directly: orders of one region's customers, before lineitem
select count(*) from nation, customer, orders, lineitem, supplier where s_nationkey = n_nationkey and c_nationkey = s_nationkey and c_custkey = o_custkey and o_orderkey = l_orderkey and l_suppkey = s_suppkey and n_name = 'JAPAN' and o_orderdate < date '1993-01-01'
