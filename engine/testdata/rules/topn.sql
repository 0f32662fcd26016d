select o_orderkey from orders order by o_totalprice desc limit 10
----
select o_orderkey from orders order by o_totalprice desc limit 10 offset 5
----
-- no TopN without ORDER BY
select o_orderkey from orders limit 10
