select nope from lineitem
----
select l_orderkey from lineitem, orders where x.l_orderkey = 1
----
select lineitem.nope from lineitem
----
select * from nosuchtable
----
select n_name from nation n1, nation n2
----
select * from nation, nation
----
select n_nationkey from nation where count(*) > 1
----
select n_regionkey, n_name from nation group by n_regionkey
----
select n_regionkey, count(*) from nation group by n_regionkey having n_name = 'x'
----
select n_regionkey from nation group by n_regionkey order by n_name
----
select sum(max(n_nationkey)) from nation
----
select sum(n_name) from nation
----
select avg(*) from nation
----
select n_name + 1 from nation
----
select * from nation where n_name
----
select * from nation where n_nationkey = 'abc'
----
select * from orders where o_orderdate < '1998-13-45'
----
select * from nation where n_name like 5
----
select substring(n_name, 'x') from nation
----
select nosuchfunc(1)
----
select * from (select 1, 2) as t (a, b, c)
----
select a from (select 1 as a, 2 as b) t (x)
----
select 1 union select 1, 2
----
select 1 union select 'x'
----
select case when 1 then 2 end
----
select case when true then 1 else 'x' end
----
select cast(date '2020-01-01' as integer)
----
select cast(1 as timestamp)
----
select 1 limit -1
----
select 1 limit n_nationkey
----
select n_name from nation order by 5
----
select distinct n_name from nation order by n_regionkey
----
select row_number() from nation
----
select n_name from nation where row_number() over () > 1
----
select * from nation where n_nationkey in (select n_nationkey, n_name from nation)
----
select (select n_nationkey from nation) + 'x'
----
select timestamp '2020-01-01' * 2
----
select date '2020-01-01' * 2
----
select * from nation join region using (nope)
----
with x as (select 1 as a), x as (select 2) select * from x
----
insert into nation values (1)
----
insert into nation (nope) values (1)
----
copy nation from 'x.csv' with (format json)
----
copy nation from 'x.csv' with (delimiter 'ab')
----
create table t (a decimal(50, 2))
----
create table t (a int, a int)
----
select 1/0 from nation where n_name = n_nationkey
----
insert into nation (n_nationkey, n_name, n_regionkey) values (99, 'X', 1)
----
create view v (a, b, c) as select 1, 2
----
create view v as select 1 as a, 2 as a
----
create view nation as select 1
----
copy nation from 'n.csv' with (quote '''')
----
copy nation from 'n.csv' with (escape '\\', format csv)
----
copy nation from stdin (format binary)
----
copy nation to stdin
----
copy nation from 'n.parquet' with (header)
----
explain select nope
----
select sum(n_nationkey) over (order by n_name rows between current row and 1 preceding) from nation
----
select sum(n_nationkey) over (order by n_name range between 1 preceding and current row) from nation
----
select count(*) filter (where n_name) from nation
----
select n_name from nation where n_nationkey = (select r_regionkey, r_name from region)
----
select * from nation where exists (select 1) and n_name in (select 1)
----
select * from nation n join region r on n.n_regionkey = r.nope
----
select x.* from nation
----
describe nosuch
----
select 1 from nation group by 2
----
analyze nation, nosuch
----
analyze verbose nation (n_name,
  n_nope)
----
analyze region (r_name, r_name)
