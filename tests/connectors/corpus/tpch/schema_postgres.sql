-- TPC-H's eight tables (TPC-H specification 3.0.1, clause 1.4: names and columns), filled
-- with generated rows at about scale factor 0.01 whose values take the shapes the 22 queries
-- filter on (brands, containers, types, segments, ship modes, nations, regions, dates
-- 1992-1998, phone prefixes, comment words). Not dbgen's data: the queries, not the rows,
-- are what others wrote. Deterministic (setseed).
SELECT setseed(0.38);
CREATE TABLE region (r_regionkey int PRIMARY KEY, r_name text, r_comment text);
CREATE TABLE nation (n_nationkey int PRIMARY KEY, n_name text, n_regionkey int, n_comment text);
CREATE TABLE supplier (s_suppkey int PRIMARY KEY, s_name text, s_address text,
  s_nationkey int, s_phone text, s_acctbal numeric(15, 2), s_comment text);
CREATE TABLE customer (c_custkey int PRIMARY KEY, c_name text, c_address text,
  c_nationkey int, c_phone text, c_acctbal numeric(15, 2), c_mktsegment text, c_comment text);
CREATE TABLE part (p_partkey int PRIMARY KEY, p_name text, p_mfgr text, p_brand text,
  p_type text, p_size int, p_container text, p_retailprice numeric(15, 2), p_comment text);
CREATE TABLE partsupp (ps_partkey int, ps_suppkey int, ps_availqty int,
  ps_supplycost numeric(15, 2), ps_comment text, PRIMARY KEY (ps_partkey, ps_suppkey));
CREATE TABLE orders (o_orderkey int PRIMARY KEY, o_custkey int, o_orderstatus text,
  o_totalprice numeric(15, 2), o_orderdate date, o_orderpriority text, o_clerk text,
  o_shippriority int, o_comment text);
CREATE TABLE lineitem (l_orderkey int, l_partkey int, l_suppkey int, l_linenumber int,
  l_quantity numeric(15, 2), l_extendedprice numeric(15, 2), l_discount numeric(15, 2),
  l_tax numeric(15, 2), l_returnflag text, l_linestatus text, l_shipdate date,
  l_commitdate date, l_receiptdate date, l_shipinstruct text, l_shipmode text,
  l_comment text, PRIMARY KEY (l_orderkey, l_linenumber));
INSERT INTO region SELECT k, (ARRAY['AFRICA', 'AMERICA', 'ASIA', 'EUROPE', 'MIDDLE EAST'])[k + 1],
  'region ' || k FROM generate_series(0, 4) k;
INSERT INTO nation SELECT k, (ARRAY['ALGERIA', 'ARGENTINA', 'BRAZIL', 'CANADA', 'EGYPT',
  'ETHIOPIA', 'FRANCE', 'GERMANY', 'INDIA', 'INDONESIA', 'IRAN', 'IRAQ', 'JAPAN', 'JORDAN',
  'KENYA', 'MOROCCO', 'MOZAMBIQUE', 'PERU', 'CHINA', 'ROMANIA', 'SAUDI ARABIA', 'VIETNAM',
  'RUSSIA', 'UNITED KINGDOM', 'UNITED STATES'])[k + 1],
  (ARRAY[0, 1, 1, 1, 4, 0, 3, 3, 2, 2, 4, 4, 2, 4, 0, 0, 0, 1, 2, 3, 4, 2, 3, 3, 1])[k + 1],
  'nation ' || k FROM generate_series(0, 24) k;
INSERT INTO supplier SELECT k, 'Supplier#' || lpad(k::text, 9, '0'), 'addr ' || k, mod(k, 25),
  (10 + mod(k, 25)) || '-' || lpad(mod(k * 7, 1000)::text, 3, '0') || '-555-0100',
  round((random() * 10998 - 999)::numeric, 2),
  CASE WHEN mod(k, 17) = 0 THEN 'slyly Customer unusual Complaints' ELSE 'quiet deposits' END
  FROM generate_series(1, 100) k;
INSERT INTO customer SELECT k, 'Customer#' || lpad(k::text, 9, '0'), 'addr ' || k, mod(k, 25),
  (10 + mod(k, 25)) || '-' || lpad(mod(k * 13, 1000)::text, 3, '0') || '-555-0199',
  round((random() * 10998 - 999)::numeric, 2),
  (ARRAY['AUTOMOBILE', 'BUILDING', 'FURNITURE', 'HOUSEHOLD', 'MACHINERY'])[1 + mod(k, 5)],
  'customer ' || k FROM generate_series(1, 1500) k;
INSERT INTO part SELECT k,
  (ARRAY['green', 'forest', 'lace', 'blue', 'ivory', 'navy'])[1 + mod(k, 6)] || ' '
    || (ARRAY['almond', 'brown', 'chiffon', 'khaki', 'linen'])[1 + mod(k, 5)],
  'Manufacturer#' || (1 + mod(k, 5)), 'Brand#' || (1 + mod(k, 5)) || (1 + mod(k / 5, 5)),
  (ARRAY['STANDARD', 'SMALL', 'MEDIUM', 'LARGE', 'ECONOMY', 'PROMO'])[1 + mod(k, 6)] || ' '
    || (ARRAY['ANODIZED', 'BURNISHED', 'PLATED', 'POLISHED', 'BRUSHED'])[1 + mod(k, 5)] || ' '
    || (ARRAY['TIN', 'NICKEL', 'BRASS', 'STEEL', 'COPPER'])[1 + mod(k / 3, 5)],
  1 + mod(k, 50),
  (ARRAY['SM', 'MED', 'LG', 'JUMBO', 'WRAP'])[1 + mod(k / 7, 5)] || ' '
    || (ARRAY['CASE', 'BOX', 'BAG', 'JAR', 'PKG', 'PACK', 'CAN', 'DRUM'])[1 + mod(k, 8)],
  900 + mod(k, 1000) / 10.0, 'part ' || k FROM generate_series(1, 2000) k;
INSERT INTO partsupp SELECT p, 1 + mod(p + s * 25, 100), 1 + mod(p * s, 9999),
  round((1 + random() * 999)::numeric, 2), 'partsupp' FROM generate_series(1, 2000) p,
  generate_series(0, 3) s;
INSERT INTO orders SELECT k, 1 + mod(k * 7, 1500), (ARRAY['F', 'O', 'P'])[1 + mod(k, 3)],
  round((1000 + random() * 300000)::numeric, 2), date '1992-01-01' + mod(k * 37, 2400),
  (ARRAY['1-URGENT', '2-HIGH', '3-MEDIUM', '4-NOT SPECIFIED', '5-LOW'])[1 + mod(k, 5)],
  'Clerk#' || lpad(mod(k, 1000)::text, 9, '0'), 0,
  CASE WHEN mod(k, 50) = 0 THEN 'quick special pending requests' ELSE 'regular ideas' END
  FROM generate_series(1, 15000) k;
INSERT INTO lineitem SELECT o, 1 + mod(o * 11 + n * 3, 2000), 1 + mod(o * 11 + n * 3 + n * 25, 100),
  n, 1 + mod(o + n, 50), round((1000 + random() * 90000)::numeric, 2), mod(o + n, 11) / 100.0,
  mod(o, 9) / 100.0, (ARRAY['R', 'A', 'N'])[1 + mod(o + n, 3)], (ARRAY['O', 'F'])[1 + mod(o, 2)],
  date '1992-01-01' + mod(o * 37, 2400) + 1 + mod(n * 13, 120),
  date '1992-01-01' + mod(o * 37, 2400) + 30 + mod(n * 7, 60),
  date '1992-01-01' + mod(o * 37, 2400) + 2 + mod(n * 17, 150),
  (ARRAY['DELIVER IN PERSON', 'COLLECT COD', 'NONE', 'TAKE BACK RETURN'])[1 + mod(o + n, 4)],
  (ARRAY['REG AIR', 'AIR', 'RAIL', 'SHIP', 'TRUCK', 'MAIL', 'FOB'])[1 + mod(o * 3 + n, 7)],
  'lineitem' FROM generate_series(1, 15000) o, generate_series(1, 4) n;
CREATE INDEX lineitem_part ON lineitem (l_partkey);
CREATE INDEX lineitem_order ON lineitem (l_orderkey);
CREATE INDEX orders_customer ON orders (o_custkey);
ANALYZE;
