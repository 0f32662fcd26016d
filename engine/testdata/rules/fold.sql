select l_orderkey from lineitem where l_shipdate <= date '1998-12-01' - interval '90' day (3) and 1 = 1
----
-- common conjuncts of OR arms are factored out
select l_orderkey from lineitem, part where (p_partkey = l_partkey and p_size = 1) or (p_partkey = l_partkey and p_size = 2)
----
select case when 1 > 2 then 'a' when true then 'b' else 'c' end, not not (l_tax > 0), l_tax * (1 + 0) from lineitem where false or l_discount > 0.05 + 0.01
