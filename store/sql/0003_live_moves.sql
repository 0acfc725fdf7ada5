-- inlet PostgreSQL store, schema version 3: bucket moves without a write stall.
--
-- A move copies a bucket from shard A to shard B while A still owns it and takes writes
-- for it. While the bucket is being copied (a row in mail.copying on A), statement
-- triggers on mail.message note every copy of it that is inserted, changed or deleted
-- (mail.move_log); the mover applies those notes to B again and again (catch_up_v1),
-- freezes the bucket on A only for the last few, lets B take it and then A leave it.
-- Statement triggers with transition tables: one call per statement (a batch of puts is
-- one), a probe of an empty table when nothing is being moved.
--
-- The *_buckets_v1 functions change many buckets in one transaction (one commit, one
-- notification), so a rebalance of mostly empty buckets costs round trips, not commits.

-- A bucket's home copies by their primary bucket: leaving a bucket (home flags off on
-- the old shard) and taking it (on the new one) read them while writes to the bucket
-- wait, and each did a scan of every copy on the shard per bucket. Declared on the
-- parent only (a catalog change: no partition is read, no write waits); inletd then
-- builds it on each partition with CREATE INDEX CONCURRENTLY, outside any transaction,
-- and attaches it (build_deferred_indexes). Partitions made later get it from the parent.
CREATE INDEX message_primary_bucket ON ONLY mail.message (primary_bucket);

-- Buckets being copied away from this shard (it still owns them).
CREATE TABLE mail.copying (
  bucket int PRIMARY KEY,
  since timestamptz NOT NULL DEFAULT now()
);

-- Copies of a bucket being copied that changed since the copy began (what to apply to
-- the new shard again). Rows are removed once applied; the mover reads them by bucket.
CREATE TABLE mail.move_log (
  seq bigserial PRIMARY KEY,
  bucket int NOT NULL,
  id text COLLATE "C" NOT NULL,
  received timestamptz NOT NULL
);
CREATE INDEX move_log_bucket ON mail.move_log (bucket, seq);

CREATE FUNCTION mail.log_moving_rows() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM mail.copying) THEN
    RETURN NULL;
  END IF;
  IF TG_OP IN ('UPDATE', 'DELETE') THEN
    INSERT INTO mail.move_log (bucket, id, received)
    SELECT c.bucket, r.id, r.received
      FROM old_rows r JOIN mail.copying c
        ON c.bucket = ANY (r.buckets) OR (c.bucket = r.primary_bucket AND r.mailboxes = '{}');
  END IF;
  IF TG_OP IN ('UPDATE', 'INSERT') THEN
    INSERT INTO mail.move_log (bucket, id, received)
    SELECT c.bucket, r.id, r.received
      FROM new_rows r JOIN mail.copying c
        ON c.bucket = ANY (r.buckets) OR (c.bucket = r.primary_bucket AND r.mailboxes = '{}');
  END IF;
  RETURN NULL;
END
$$;

CREATE TRIGGER message_moving_insert AFTER INSERT ON mail.message
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION mail.log_moving_rows();
CREATE TRIGGER message_moving_update AFTER UPDATE ON mail.message
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION mail.log_moving_rows();
CREATE TRIGGER message_moving_delete AFTER DELETE ON mail.message
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION mail.log_moving_rows();

-- On B, first: the buckets are arriving (mail.expect_bucket_v1 for each).
CREATE FUNCTION mail.expect_buckets_v1(bs int[]) RETURNS text[] LANGUAGE plpgsql AS $$
DECLARE
  out text[] := '{}';
  x int;
BEGIN
  FOREACH x IN ARRAY bs LOOP
    out := out || mail.expect_bucket_v1(x);
  END LOOP;
  RETURN out;
END
$$;

-- On A: start noting the changes of these buckets (they stay owned: writes go on).
-- Under the exclusive ownership lock: every writer that did not see the row has
-- committed before, so the copy that follows reads what it wrote.
CREATE FUNCTION mail.start_copy_v1(bs int[]) RETURNS text[] LANGUAGE plpgsql AS $$
DECLARE
  out text[] := '{}';
  x int;
  s text;
BEGIN
  PERFORM pg_advisory_xact_lock(1768844404, 2);
  FOREACH x IN ARRAY bs LOOP
    SELECT state INTO s FROM mail.bucket WHERE bucket = x;
    IF s IN ('owned', 'frozen') THEN
      INSERT INTO mail.copying (bucket) VALUES (x) ON CONFLICT DO NOTHING;
    END IF;
    out := out || coalesce(s, '');
  END LOOP;
  RETURN out;
END
$$;

-- On A: no more writes to these buckets (mail.freeze_bucket_v1 for each, one notification).
CREATE FUNCTION mail.freeze_buckets_v1(bs int[], channel text) RETURNS text[] LANGUAGE plpgsql AS $$
DECLARE
  out text[] := '{}';
  x int;
BEGIN
  FOREACH x IN ARRAY bs LOOP
    out := out || mail.freeze_bucket_v1(x, '');
  END LOOP;
  IF channel <> '' THEN
    PERFORM pg_notify(channel, '- m');
  END IF;
  RETURN out;
END
$$;

-- On B: applies what changed on A for bucket b since it was copied. `ids`/`rcvd` name
-- every copy noted in A's log; `msgs` are those A still holds for b, as they are now.
-- B's part of b in each named copy is removed, then what A holds is stored again, with
-- A's read flag and tags.
CREATE FUNCTION mail.catch_up_v1(msgs mail.new_message_v2[], ids text[], rcvd timestamptz[], b int)
RETURNS int LANGUAGE plpgsql AS $$
BEGIN
  PERFORM mail.ownership_lock_shared();
  IF NOT EXISTS (SELECT 1 FROM mail.bucket WHERE bucket = b AND state = 'incoming') THEN
    RAISE EXCEPTION 'bucket % is not arriving here', b USING ERRCODE = '55000';
  END IF;
  IF EXISTS (SELECT 1 FROM unnest(msgs) AS m
              WHERE m.home OR EXISTS (SELECT 1 FROM unnest(m.buckets) AS x WHERE x <> b)) THEN
    RAISE EXCEPTION 'catch-up of bucket %: a copy is home or names another bucket', b USING ERRCODE = '22023';
  END IF;
  DELETE FROM mail.inbox i USING unnest(ids, rcvd) AS x(id, received)
   WHERE i.bucket = b AND i.id = x.id AND i.received = x.received;
  UPDATE mail.message m
     SET mailboxes = ARRAY(SELECT y.mb FROM unnest(m.mailboxes, m.buckets) AS y(mb, bk) WHERE y.bk <> b),
         buckets = array_remove(m.buckets, b)
    FROM unnest(ids, rcvd) AS x(id, received)
   WHERE m.id = x.id AND m.received = x.received AND m.buckets @> ARRAY[b];
  DELETE FROM mail.message m USING unnest(ids, rcvd) AS x(id, received)
   WHERE m.id = x.id AND m.received = x.received AND NOT m.home AND m.mailboxes = '{}';
  PERFORM mail.store_copies(msgs);
  INSERT INTO mail.tag (tag) SELECT DISTINCT t FROM unnest(msgs) AS m, unnest(m.tags) AS t
  ON CONFLICT DO NOTHING;
  WITH u AS (
    UPDATE mail.message t SET read = m.read, tags = m.tags
      FROM unnest(msgs) AS m
     WHERE t.id = m.id AND t.received = m.received
       AND (t.read <> m.read OR t.tags IS DISTINCT FROM m.tags)
    RETURNING t.received, t.home, t.read, (t.read <> m.read) AS flipped
  )
  INSERT INTO mail.tally (part, messages, unread, bytes)
  SELECT p.lower, 0, count(*) FILTER (WHERE NOT u.read) - count(*) FILTER (WHERE u.read), 0
    FROM u JOIN mail.part p ON u.received >= p.lower AND u.received < p.upper
   WHERE u.home AND u.flipped
   GROUP BY p.lower;
  RETURN cardinality(ids);
END
$$;

-- On B: the buckets are here (mail.take_bucket_v1 for each, one notification). With
-- this schema B takes a bucket before A leaves it (A frozen meanwhile): for that
-- instant both count it, which readers detect (docs/store-pg.md) where the other order
-- left a moment in which nobody counted it.
CREATE FUNCTION mail.take_buckets_v1(bs int[], channel text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  n bigint := 0;
  x int;
BEGIN
  FOREACH x IN ARRAY bs LOOP
    n := n + mail.take_bucket_v1(x, '');
  END LOOP;
  IF channel <> '' THEN
    PERFORM pg_notify(channel, '- m');
  END IF;
  RETURN n;
END
$$;

-- On A: the buckets are gone from here (mail.leave_bucket_v1 for each) and no longer
-- noted (their log is dropped: the new shard has applied it).
CREATE FUNCTION mail.leave_buckets_v2(bs int[], channel text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  n bigint := 0;
  x int;
BEGIN
  FOREACH x IN ARRAY bs LOOP
    n := n + mail.leave_bucket_v1(x, '');
  END LOOP;
  DELETE FROM mail.copying WHERE bucket = ANY (bs)
     AND bucket NOT IN (SELECT bucket FROM mail.bucket WHERE state IN ('owned', 'frozen'));
  DELETE FROM mail.move_log WHERE bucket = ANY (bs)
     AND bucket NOT IN (SELECT bucket FROM mail.bucket WHERE state IN ('owned', 'frozen'));
  IF channel <> '' THEN
    PERFORM pg_notify(channel, '- m');
  END IF;
  RETURN n;
END
$$;

-- On A, last: mail.release_bucket_v1 for each.
CREATE FUNCTION mail.release_buckets_v1(bs int[]) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  n bigint := 0;
  x int;
BEGIN
  FOREACH x IN ARRAY bs LOOP
    n := n + mail.release_bucket_v1(x);
  END LOOP;
  RETURN n;
END
$$;

-- TRUNCATE fires no row or DELETE trigger: clearing everything is refused while a bucket
-- is being copied, as it already was while one was frozen or arriving.
CREATE OR REPLACE FUNCTION mail.clear_v1(channel text, origin text) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
  n bigint;
BEGIN
  PERFORM mail.ownership_lock_shared();
  IF EXISTS (SELECT 1 FROM mail.bucket WHERE state <> 'owned') OR EXISTS (SELECT 1 FROM mail.copying) THEN
    RAISE EXCEPTION 'a bucket move is in progress' USING ERRCODE = '55006';
  END IF;
  SELECT coalesce(sum(messages), 0) INTO n FROM mail.tally;
  TRUNCATE mail.message, mail.inbox, mail.tally, mail.tag;
  IF channel <> '' THEN
    PERFORM pg_notify(channel, origin || ' x');
  END IF;
  RETURN n;
END
$$;

-- True when a copy may change here now: each of its buckets owned or arriving. A bucket
-- arriving here may be changed too (version 1 refused it): the engine changes the copy
-- this shard holds for its own buckets, which the import merged the arriving bucket's
-- mailboxes into, and the old shard, still the owner, notes the same change for the
-- catch-up. Refusing it would hold such changes for the whole copy.
CREATE OR REPLACE FUNCTION mail.writable(buckets int[]) RETURNS boolean LANGUAGE sql STABLE AS $$
  SELECT NOT EXISTS (SELECT 1 FROM unnest(buckets) AS b(bucket)
                      WHERE coalesce((SELECT k.state FROM mail.bucket k WHERE k.bucket = b.bucket), '')
                            NOT IN ('owned', 'incoming'))
$$;
