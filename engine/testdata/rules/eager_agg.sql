tpch 3
----
tpch 18
----
tpch 10
----
select c_name, o_orderdate, count(*), min(l_quantity), max(l_discount) from customer, orders, lineitem where c_custkey = o_custkey and o_orderkey = l_orderkey and o_orderdate < date '1995-01-01' group by c_name, o_orderdate
