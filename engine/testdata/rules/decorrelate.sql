-- EXISTS / NOT EXISTS conjuncts: semi and anti joins
select o_orderkey from orders where exists (select * from lineitem where l_orderkey = o_orderkey and l_quantity > 10) and not exists (select * from customer where c_custkey = o_custkey)
----
-- IN / NOT IN: semi and null-aware anti joins
select p_partkey from part where p_partkey in (select ps_partkey from partsupp) and p_size not in (select s_nationkey from supplier)
----
-- under OR: mark joins
select c_name from customer where c_acctbal > 0 or exists (select * from orders where o_custkey = c_custkey)
----
-- uncorrelated scalar: single join
select n_name from nation where n_nationkey = (select max(r_regionkey) from region)
----
-- correlated scalar aggregate: grouped by the correlation key, left joined
select p_partkey from part where p_retailprice > (select avg(ps_supplycost) from partsupp where ps_partkey = p_partkey)
----
-- correlated count: COALESCE(count, 0) keeps the count bug away
select c_custkey, (select count(*) from orders where o_custkey = c_custkey) from customer
----
-- EXISTS over an aggregate without GROUP BY is always true
select r_name from region where exists (select count(*) from nation where n_regionkey = r_regionkey)
----
-- nested: a subquery inside a subquery (TPC-H Q20 shape)
select s_name from supplier where s_suppkey in (select ps_suppkey from partsupp where ps_availqty > (select sum(l_quantity) from lineitem where l_partkey = ps_partkey and l_suppkey = ps_suppkey))
