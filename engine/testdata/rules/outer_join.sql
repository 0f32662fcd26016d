-- a WHERE condition on the nullable side makes a left join inner
select c_name, o_orderkey from customer left join orders on c_custkey = o_custkey where o_totalprice > 100
----
-- IS NULL does not reject NULLs: the left join stays
select c_name from customer left join orders on c_custkey = o_custkey where o_orderkey is null
----
-- full join: a condition on the left side makes it a left join
select c_name from customer full join orders on c_custkey = o_custkey where c_acctbal > 0
----
-- a single join whose right side has one row is an inner join when its NULL is rejected
select n_name from nation where n_nationkey = (select max(r_regionkey) from region)
