tpch 17
----
tpch 20
----
tpch 2
