select l_orderkey from lineitem where l_quantity > 10
----
-- unused aggregates and derived-table columns disappear
select k from (select l_orderkey as k, sum(l_quantity) as s, max(l_tax) as m from lineitem group by l_orderkey) t
----
select count(*) from orders
