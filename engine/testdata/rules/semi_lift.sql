tpch 21
----
tpch 18
----
tpch 4
