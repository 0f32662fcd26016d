select from t
----
select a,
	b +
from t
----
select (1 + 2 from t
----
select * from t where
----
select 'unterminated
----
select "unterminated
----
select 1 /* unterminated comment
----
select a ? b
----
select 123abc
----
select 1e+
----
select ""
----
selec 1
----
select * from t where a = 1 2
----
select * from t left x
----
select * from t join u
----
select * from natural
----
select * from t natural cross join u
----
select case end
----
select case when a then b
----
select cast(a integer)
----
select cast(a as)
----
select a::
----
select interval 90 day
----
select interval '1' day to fortnight
----
select extract(from d)
----
select count(distinct)
----
select x not null
----
select a is maybe
----
select a between 1
----
select a in 1, 2
----
select 1 union
----
select * from (select 1
----
with x as select 1 select 2
----
with recursive (select 1) select 1
----
select distinct on a from t
----
select a from t order by a nulls
----
select a from t limit
----
select sum(x) over w from t window w as (order by x) window v as ()
----
select sum(x) over (rows between 1 and current row) from t
----
values (1, 2), (3)
----
create table t (a integer references u (b) on delete explode)
----
create table t (a integer, foreign key (a) references)
----
create table t (a integer, foreign key a references u)
----
create table t (a integer, primary key a)
----
create table t (a integer default 1 default 2)
----
create table t (a integer constraint c)
----
create table t (primary key (a))
----
create table t (a, primary key (a)) as select 1
----
create external table t (a integer primary key) stored as parquet location 'x'
----
create table t (a, b)
----
create table t (a int) as select 1
----
create view v (a) select 1
----
create index i on t ()
----
create unique i on t (a)
----
create index i t (a)
----
drop index
----
drop table
----
drop schema s
----
insert t values (1)
----
insert into t (a) 1
----
copy (select 1) from 'x'
----
copy t from x
----
copy t from 'x' with (, header)
----
explain (costs) select 1
----
explain (analyze maybe) select 1
----
set x
----
set x = (1)
----
describe
----
update t set a =
----
select * from t where a = current_time(
----
select a from t where a similar 'x'
----
select 1; select 2 3
----
select a,
	b
from t
where c = 1 and
	d = 'x
----
select t.* + 1 from t
----
select a.b.c.d.e from t
----
select 'é' @ 1
----
create external table e stored as parquet
----
delete t where a = 1
----
update t set t.a = 1
----
update t set a = 1 returning
----
delete from t returning a,
----
update t a = 1
----
select a = any (1, 2) from t
----
select a = all from t
----
select x'0g'
----
select X'abc'
----
select x'01
----
analyze 1
----
analyze t (
----
analyze t ()
----
analyze t, 
----
analyze t u
----
analyze verbose verbose verbose
----
analyze (buffer_usage_limit 10) t
----
analyze (verbose 'yes') t
----
analyze select
----
analyze 'x.parquet'
----
select * from t, lateral s
----
select * from t, lateral 1
