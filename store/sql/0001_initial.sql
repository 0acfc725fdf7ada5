-- inlet PostgreSQL store, schema version 1. Applied by inletd itself (store/src/pg/schema.cpp)
-- inside one transaction, under an advisory lock; docs/store-pg.md explains every object.
-- Statements are separated by semicolons at the end of a line; function bodies use $$.

CREATE SCHEMA IF NOT EXISTS mail;

-- Which shard this database is, of which cluster (written once, by cluster set-up).
CREATE TABLE mail.meta (
  key text COLLATE "C" PRIMARY KEY,
  value text NOT NULL
);

CREATE TYPE mail.addr AS (name text, address text);
CREATE TYPE mail.attach AS (filename text, type text, size bigint);

-- The buckets this shard holds, and in which state (the bucket map is the union of
-- every shard's table). owned: read and write; frozen: read only (being copied away);
-- incoming: being copied in (neither); gone: copied away, data being removed (neither).
CREATE TABLE mail.bucket (
  bucket int PRIMARY KEY,
  state text NOT NULL CHECK (state IN ('owned', 'frozen', 'incoming', 'gone')),
  changed timestamptz NOT NULL DEFAULT now()
);

-- Time ranges of the partitions of mail.message and mail.inbox.
CREATE TABLE mail.part (
  lower timestamptz PRIMARY KEY,
  upper timestamptz NOT NULL,
  name text NOT NULL
);

-- One row per message per shard holding it (a copy per shard its recipients are on).
-- home: the copy that global listings and counts use (the shard of the message's
-- primary bucket, the bucket of its first recipient).
CREATE TABLE mail.message (
  id text COLLATE "C" NOT NULL,
  received timestamptz NOT NULL,
  created timestamptz NOT NULL,
  home boolean NOT NULL,
  primary_bucket int NOT NULL,
  mailboxes text[] COLLATE "C" NOT NULL,
  buckets int[] NOT NULL,
  helo text NOT NULL,
  mail_from text NOT NULL,
  rcpt_to text[] NOT NULL,
  remote text NOT NULL,
  protocol text NOT NULL,
  auth_user text NOT NULL,
  from_addr mail.addr NOT NULL,
  to_addrs mail.addr[] NOT NULL,
  cc_addrs mail.addr[] NOT NULL,
  bcc_addrs mail.addr[] NOT NULL,
  reply_to_addrs mail.addr[] NOT NULL,
  subject text NOT NULL,
  sent timestamptz,
  message_id text NOT NULL,
  snippet text NOT NULL,
  attachments mail.attach[] NOT NULL,
  inline_parts int NOT NULL,
  search_text text NOT NULL,
  fields text[] NOT NULL,
  size bigint NOT NULL,
  read boolean NOT NULL DEFAULT false,
  tags text[] NOT NULL DEFAULT '{}',
  raw bytea NOT NULL,
  PRIMARY KEY (id, received)
) PARTITION BY RANGE (received);
ALTER TABLE mail.message ALTER COLUMN raw SET COMPRESSION lz4;
-- search_text is a message's decoded text (up to 8 KiB): compressed too, with lz4 rather
-- than the default pglz, which costs more CPU for no smaller result on mail.
ALTER TABLE mail.message ALTER COLUMN search_text SET COMPRESSION lz4;

-- The mailbox index: one row per (recipient mailbox, message) on the mailbox's shard.
CREATE TABLE mail.inbox (
  bucket int NOT NULL,
  mailbox text COLLATE "C" NOT NULL,
  id text COLLATE "C" NOT NULL,
  received timestamptz NOT NULL,
  PRIMARY KEY (bucket, mailbox, id, received)
) PARTITION BY RANGE (received);

-- Counts of home copies per partition, as insert-only deltas (no hot row for
-- concurrent writers); mail.compact_tally() folds them.
CREATE TABLE mail.tally (
  part timestamptz NOT NULL,
  messages bigint NOT NULL,
  unread bigint NOT NULL,
  bytes bigint NOT NULL
);

-- Tags in use (as first seen); list_tags checks each against the messages.
CREATE TABLE mail.tag (
  tag text COLLATE "C" PRIMARY KEY
);

-- What a writer sends: one element per message copy (binary, encoded by inletd).
CREATE TYPE mail.new_message_v1 AS (
  id text,
  received timestamptz,
  created timestamptz,
  home boolean,
  primary_bucket int,
  mailboxes text[],
  buckets int[],
  helo text,
  mail_from text,
  rcpt_to text[],
  remote text,
  protocol text,
  auth_user text,
  from_addr mail.addr,
  to_addrs mail.addr[],
  cc_addrs mail.addr[],
  bcc_addrs mail.addr[],
  reply_to_addrs mail.addr[],
  subject text,
  sent timestamptz,
  message_id text,
  snippet text,
  attachments mail.attach[],
  inline_parts int,
  search_text text,
  fields text[],
  size bigint,
  tags text[],
  read boolean,
  raw bytea
);

-- The lock that orders writers against bucket moves: writers take it shared for their
-- transaction, a move takes it exclusively for the instant it changes a bucket's state.
CREATE FUNCTION mail.ownership_lock_shared() RETURNS void LANGUAGE sql AS $$
  SELECT pg_advisory_xact_lock_shared(1768844404, 2)
$$;

-- Tells other instances (LISTEN on `channel`) what changed: "ORIGIN KIND ID,ID,...".
-- A payload over PostgreSQL's limit (8000 bytes) becomes "ORIGIN x": reload everything.
CREATE FUNCTION mail.notify(channel text, origin text, kind text, ids text[]) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  payload text;
BEGIN
  IF channel = '' OR cardinality(ids) = 0 THEN
    RETURN;
  END IF;
  payload := origin || ' ' || kind || ' ' || array_to_string(ids, ',');
  IF octet_length(payload) > 7900 THEN
    payload := origin || ' x';
  END IF;
  PERFORM pg_notify(channel, payload);
END
$$;

-- Stores message copies (the caller has checked ownership and holds the ownership
-- lock). A copy already stored (a retried batch whose commit was not acknowledged) is
-- not stored again; a copy of a message this shard already holds for other mailboxes
-- (its recipients' buckets were rerouted while it was written, or a bucket move brings
-- it) is merged into the stored one: mailboxes added, home kept if either is home.
-- Returns the IDs of the copies that were new (for events).
CREATE FUNCTION mail.store_copies(msgs mail.new_message_v1[]) RETURNS text[]
LANGUAGE plpgsql AS $$
DECLARE
  stored text[];
BEGIN
  -- Fast path: none of the copies is here yet (plain inserts; a unique violation undoes
  -- this block, at the price of one subtransaction per batch).
  BEGIN
    WITH ins AS (
      INSERT INTO mail.message (id, received, created, home, primary_bucket, mailboxes, buckets, helo,
                                mail_from, rcpt_to, remote, protocol, auth_user, from_addr,
                                to_addrs, cc_addrs, bcc_addrs, reply_to_addrs, subject, sent,
                                message_id, snippet, attachments, inline_parts, search_text,
                                fields, size, tags, read, raw)
      SELECT m.id, m.received, m.created, m.home, m.primary_bucket, m.mailboxes, m.buckets, m.helo,
             m.mail_from, m.rcpt_to, m.remote, m.protocol, m.auth_user, m.from_addr,
             m.to_addrs, m.cc_addrs, m.bcc_addrs, m.reply_to_addrs, m.subject, m.sent,
             m.message_id, m.snippet, m.attachments, m.inline_parts, m.search_text,
             m.fields, m.size, m.tags, m.read, m.raw
        FROM unnest(msgs) AS m
      RETURNING id, received, home, read, size, tags, mailboxes, buckets
    ), inb AS (
      INSERT INTO mail.inbox (bucket, mailbox, id, received)
      SELECT x.bucket, x.mailbox, ins.id, ins.received
        FROM ins, unnest(ins.mailboxes, ins.buckets) AS x(mailbox, bucket)
    ), tg AS (
      INSERT INTO mail.tag (tag)
      SELECT DISTINCT t FROM ins, unnest(ins.tags) AS t
      ON CONFLICT DO NOTHING
    ), tl AS (
      INSERT INTO mail.tally (part, messages, unread, bytes)
      SELECT p.lower, count(*), count(*) FILTER (WHERE NOT ins.read), sum(ins.size)
        FROM ins JOIN mail.part p ON ins.received >= p.lower AND ins.received < p.upper
       WHERE ins.home
       GROUP BY p.lower
    )
    SELECT coalesce(array_agg(id), '{}') INTO stored FROM ins;
    RETURN stored;
  EXCEPTION WHEN unique_violation THEN
    NULL;  -- a retried batch, or a copy meeting one already stored: the careful path
  END;

  WITH ins AS (
    INSERT INTO mail.message (id, received, created, home, primary_bucket, mailboxes, buckets, helo,
                              mail_from, rcpt_to, remote, protocol, auth_user, from_addr,
                              to_addrs, cc_addrs, bcc_addrs, reply_to_addrs, subject, sent,
                              message_id, snippet, attachments, inline_parts, search_text,
                              fields, size, tags, read, raw)
    SELECT m.id, m.received, m.created, m.home, m.primary_bucket, m.mailboxes, m.buckets, m.helo,
           m.mail_from, m.rcpt_to, m.remote, m.protocol, m.auth_user, m.from_addr,
           m.to_addrs, m.cc_addrs, m.bcc_addrs, m.reply_to_addrs, m.subject, m.sent,
           m.message_id, m.snippet, m.attachments, m.inline_parts, m.search_text,
           m.fields, m.size, m.tags, m.read, m.raw
      FROM unnest(msgs) AS m
    ON CONFLICT DO NOTHING
    RETURNING id, received, home, read, size, tags
  ), inb AS (
    INSERT INTO mail.inbox (bucket, mailbox, id, received)
    SELECT x.bucket, x.mailbox, m.id, m.received
      FROM unnest(msgs) AS m, unnest(m.mailboxes, m.buckets) AS x(mailbox, bucket)
    ON CONFLICT DO NOTHING
  ), tg AS (
    INSERT INTO mail.tag (tag)
    SELECT DISTINCT t FROM ins, unnest(ins.tags) AS t
    ON CONFLICT DO NOTHING
  ), tl AS (
    INSERT INTO mail.tally (part, messages, unread, bytes)
    SELECT p.lower, count(*), count(*) FILTER (WHERE NOT ins.read), sum(ins.size)
      FROM ins JOIN mail.part p ON ins.received >= p.lower AND ins.received < p.upper
     WHERE ins.home
     GROUP BY p.lower
  )
  SELECT coalesce(array_agg(id), '{}') INTO stored FROM ins;

  IF cardinality(stored) < cardinality(msgs) THEN
    -- Copies that met a stored one (possibly one stored just now, from the same batch):
    -- add what they bring.
    WITH c AS (
      SELECT m.* FROM unnest(msgs) AS m
    ), u AS (
      UPDATE mail.message t
         SET mailboxes = t.mailboxes || ARRAY(SELECT x.mb FROM unnest(c.mailboxes, c.buckets) AS x(mb, b)
                                               WHERE x.mb <> ALL (t.mailboxes)),
             buckets = t.buckets || ARRAY(SELECT x.b FROM unnest(c.mailboxes, c.buckets) AS x(mb, b)
                                           WHERE x.mb <> ALL (t.mailboxes)),
             home = t.home OR c.home
        FROM c, mail.message old
       WHERE t.id = c.id AND t.received = c.received
         AND old.id = t.id AND old.received = t.received
         AND (NOT c.mailboxes <@ t.mailboxes OR (c.home AND NOT t.home))
      RETURNING t.received, t.read, t.size, (c.home AND NOT old.home) AS became_home
    )
    INSERT INTO mail.tally (part, messages, unread, bytes)
    SELECT p.lower, count(*), count(*) FILTER (WHERE NOT u.read), sum(u.size)
      FROM u JOIN mail.part p ON u.received >= p.lower AND u.received < p.upper
     WHERE u.became_home
     GROUP BY p.lower;
  END IF;
  RETURN stored;
END
$$;

-- Keeps at most `cap` messages (the newest) in each of the given mailboxes: older ones
-- leave the mailbox, and a copy left here without a mailbox is deleted. Returns the IDs
-- whose home copy was deleted. The mailboxes' buckets must be owned and locked.
CREATE FUNCTION mail.trim_mailboxes(cap int, boxes text[], bks int[]) RETURNS text[]
LANGUAGE plpgsql AS $$
DECLARE
  gone text[] := '{}';
  r record;
  ids text[];
  rcvd timestamptz[];
  dropped text[];
BEGIN
  FOR r IN SELECT DISTINCT x.mb, x.b FROM unnest(boxes, bks) AS x(mb, b) LOOP
    WITH old AS (
      SELECT i.id, i.received FROM mail.inbox i
       WHERE i.bucket = r.b AND i.mailbox = r.mb ORDER BY i.id DESC OFFSET cap
    ), del AS (
      DELETE FROM mail.inbox i USING old
       WHERE i.bucket = r.b AND i.mailbox = r.mb AND i.id = old.id AND i.received = old.received
      RETURNING i.id, i.received
    )
    SELECT array_agg(id), array_agg(received) INTO ids, rcvd FROM del;
    CONTINUE WHEN ids IS NULL;
    UPDATE mail.message m
       SET mailboxes = ARRAY(SELECT x.mb FROM unnest(m.mailboxes, m.buckets) AS x(mb, bk)
                              WHERE NOT (x.mb = r.mb AND x.bk = r.b)),
           buckets = ARRAY(SELECT x.bk FROM unnest(m.mailboxes, m.buckets) AS x(mb, bk)
                            WHERE NOT (x.mb = r.mb AND x.bk = r.b))
     WHERE m.id = ANY (ids) AND m.received = ANY (rcvd);
    WITH d AS (
      DELETE FROM mail.message m
       WHERE m.id = ANY (ids) AND m.received = ANY (rcvd) AND m.mailboxes = '{}'
      RETURNING m.id, m.received, m.home, m.read, m.size
    ), tl AS (
      INSERT INTO mail.tally (part, messages, unread, bytes)
      SELECT p.lower, -count(*), -count(*) FILTER (WHERE NOT d.read), -sum(d.size)
        FROM d JOIN mail.part p ON d.received >= p.lower AND d.received < p.upper
       WHERE d.home
       GROUP BY p.lower
    )
    SELECT array_agg(d.id) FILTER (WHERE d.home) INTO dropped FROM d;
    gone := gone || coalesce(dropped, '{}');
  END LOOP;
  RETURN gone;
END
$$;

-- Stores a batch of message copies in one transaction. Copies whose buckets this shard
-- does not own (moved away, or being moved) are not stored: their positions (1-based)
-- come back in `refused`, and the writer retries them with a fresh bucket map. With a
-- `cap`, the batch's mailboxes (box_names, box_buckets) are trimmed to it afterwards
-- (`trimmed`: home copies deleted). Notifies `channel` (when given) with the IDs of new
-- copies and of trimmed ones; `origin` names the writer, so an instance can skip its own.
CREATE FUNCTION mail.put_v1(msgs mail.new_message_v1[], copy_of int[], bucket_of int[],
                            cap int, box_names text[], box_buckets int[],
                            channel text, origin text,
                            OUT refused int[], OUT trimmed text[])
LANGUAGE plpgsql AS $$
DECLARE
  stored text[];
BEGIN
  PERFORM mail.ownership_lock_shared();
  -- A copy is refused when one of its buckets (for a home copy, also its primary bucket)
  -- is not owned here. The writer lists those as pairs (copy position, bucket), so the
  -- check does not unpack the copies themselves.
  -- (A correlated subquery: one index probe per pair. NOT EXISTS would be planned as a
  -- hash anti-join that reads every bucket row for each batch.)
  SELECT coalesce(array_agg(DISTINCT x.c), '{}') INTO refused
    FROM unnest(copy_of, bucket_of) AS x(c, b)
   WHERE (SELECT k.state FROM mail.bucket k WHERE k.bucket = x.b) IS DISTINCT FROM 'owned';
  IF cardinality(refused) > 0 THEN
    msgs := ARRAY(SELECT msgs[i] FROM generate_subscripts(msgs, 1) AS i
                   WHERE i <> ALL (refused) ORDER BY i);
  END IF;
  stored := mail.store_copies(msgs);
  trimmed := '{}';
  IF cap > 0 THEN
    SELECT mail.trim_mailboxes(cap, coalesce(array_agg(x.mb), '{}'), coalesce(array_agg(x.b), '{}'))
      INTO trimmed
      FROM unnest(box_names, box_buckets) AS x(mb, b)
     WHERE (SELECT k.state FROM mail.bucket k WHERE k.bucket = x.b) = 'owned';
  END IF;
  PERFORM mail.notify(channel, origin, 'c', stored);
  PERFORM mail.notify(channel, origin, 'd', trimmed);
END
$$;

-- True when every bucket of a copy is owned here (a copy in a frozen bucket must not
-- change while a move copies it away).
CREATE FUNCTION mail.writable(buckets int[]) RETURNS boolean LANGUAGE sql STABLE AS $$
  SELECT NOT EXISTS (SELECT 1 FROM unnest(buckets) AS b(bucket)
                      WHERE (SELECT k.state FROM mail.bucket k WHERE k.bucket = b.bucket)
                            IS DISTINCT FROM 'owned')
$$;

-- The functions below take messages as parallel arrays of IDs and receive times (an ID
-- carries its receive time, which the caller decodes), so a lookup prunes partitions.

-- Deletes the copies of the given messages held here. Returns the IDs whose home copy
-- was deleted (what a caller counts) and, in `busy`, the IDs it could not delete now
-- (a bucket of theirs is being moved: retry).
CREATE FUNCTION mail.delete_v1(ids text[], rcvd timestamptz[], channel text, origin text,
                               OUT deleted text[], OUT busy text[])
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM mail.ownership_lock_shared();
  SELECT coalesce(array_agg(m.id), '{}') INTO busy
    FROM mail.message m
   WHERE m.id = ANY (ids) AND m.received = ANY (rcvd)
     AND NOT mail.writable(m.buckets);
  WITH d AS (
    DELETE FROM mail.message m
     WHERE m.id = ANY (ids) AND m.received = ANY (rcvd)
       AND mail.writable(m.buckets)
    RETURNING m.id, m.received, m.home, m.read, m.size, m.mailboxes, m.buckets
  ), di AS (
    DELETE FROM mail.inbox i
     USING d, unnest(d.mailboxes, d.buckets) AS x(mailbox, bucket)
     WHERE i.bucket = x.bucket AND i.mailbox = x.mailbox AND i.id = d.id
       AND i.received = d.received
  ), tl AS (
    INSERT INTO mail.tally (part, messages, unread, bytes)
    SELECT p.lower, -count(*), -count(*) FILTER (WHERE NOT d.read), -sum(d.size)
      FROM d JOIN mail.part p ON d.received >= p.lower AND d.received < p.upper
     WHERE d.home
     GROUP BY p.lower
  )
  SELECT coalesce(array_agg(d.id) FILTER (WHERE d.home), '{}') INTO deleted FROM d;
  PERFORM mail.notify(channel, origin, 'd', deleted);
END
$$;

-- Marks the copies of the given messages read (or unread). Returns the IDs whose home
-- copy changed, and the IDs it could not change now (being moved: retry).
CREATE FUNCTION mail.set_read_v1(ids text[], rcvd timestamptz[], flag boolean, channel text, origin text,
                                 OUT changed text[], OUT busy text[])
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM mail.ownership_lock_shared();
  SELECT coalesce(array_agg(m.id), '{}') INTO busy
    FROM mail.message m
   WHERE m.id = ANY (ids) AND m.received = ANY (rcvd)
     AND m.read <> flag AND NOT mail.writable(m.buckets);
  WITH u AS (
    UPDATE mail.message m SET read = flag
     WHERE m.id = ANY (ids) AND m.received = ANY (rcvd)
       AND m.read <> flag AND mail.writable(m.buckets)
    RETURNING m.id, m.received, m.home
  ), tl AS (
    INSERT INTO mail.tally (part, messages, unread, bytes)
    SELECT p.lower, 0, CASE WHEN flag THEN -count(*) ELSE count(*) END, 0
      FROM u JOIN mail.part p ON u.received >= p.lower AND u.received < p.upper
     WHERE u.home
     GROUP BY p.lower
  )
  SELECT coalesce(array_agg(u.id) FILTER (WHERE u.home), '{}') INTO changed FROM u;
  PERFORM mail.notify(channel, origin, CASE WHEN flag THEN 'r' ELSE 'u' END, changed);
END
$$;

-- Replaces the tags of the given messages (already de-duplicated by the caller).
CREATE FUNCTION mail.set_tags_v1(ids text[], rcvd timestamptz[], new_tags text[], channel text, origin text,
                                 OUT changed text[], OUT busy text[])
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM mail.ownership_lock_shared();
  SELECT coalesce(array_agg(m.id), '{}') INTO busy
    FROM mail.message m
   WHERE m.id = ANY (ids) AND m.received = ANY (rcvd)
     AND m.tags IS DISTINCT FROM new_tags AND NOT mail.writable(m.buckets);
  INSERT INTO mail.tag (tag) SELECT DISTINCT t FROM unnest(new_tags) AS t
  ON CONFLICT DO NOTHING;
  WITH u AS (
    UPDATE mail.message m SET tags = new_tags
     WHERE m.id = ANY (ids) AND m.received = ANY (rcvd)
       AND m.tags IS DISTINCT FROM new_tags AND mail.writable(m.buckets)
    RETURNING m.id, m.home
  )
  SELECT coalesce(array_agg(u.id) FILTER (WHERE u.home), '{}') INTO changed FROM u;
  PERFORM mail.notify(channel, origin, 't', changed);
END
$$;

-- Folds the tally's delta rows into one row per partition.
CREATE FUNCTION mail.compact_tally() RETURNS void LANGUAGE sql AS $$
  WITH d AS (DELETE FROM mail.tally RETURNING *)
  INSERT INTO mail.tally (part, messages, unread, bytes)
  SELECT part, sum(messages), sum(unread), sum(bytes) FROM d GROUP BY part
$$;

-- Creates the partitions that cover [now - step, now + ahead * step), contiguous with
-- the existing ones. A new partition is made as a plain table and attached (ATTACH takes
-- a lock that does not block writers, where CREATE ... PARTITION OF would).
CREATE FUNCTION mail.ensure_parts(step interval, ahead int) RETURNS int
LANGUAGE plpgsql AS $$
DECLARE
  lo timestamptz;
  hi timestamptz;
  target timestamptz := now() + ahead * step;
  made int := 0;
  suffix text;
BEGIN
  PERFORM pg_advisory_xact_lock(1768844404, 3);
  SELECT max(upper) INTO lo FROM mail.part;
  IF lo IS NULL OR lo < now() - step THEN
    lo := date_bin(step, now() - step, timestamptz '2000-01-01 00:00:00+00');
    -- never overlap a partition that reaches past the computed start
    SELECT greatest(lo, coalesce(max(upper), lo)) INTO lo FROM mail.part;
  END IF;
  WHILE lo < target LOOP
    hi := lo + step;
    suffix := to_char(lo AT TIME ZONE 'UTC', 'YYYYMMDD"t"HH24MISS');
    EXECUTE format('CREATE TABLE mail.%I (LIKE mail.message INCLUDING ALL)', 'message_' || suffix);
    EXECUTE format('ALTER TABLE mail.message ATTACH PARTITION mail.%I FOR VALUES FROM (%L) TO (%L)',
                   'message_' || suffix, lo, hi);
    EXECUTE format('CREATE TABLE mail.%I (LIKE mail.inbox INCLUDING ALL)', 'inbox_' || suffix);
    EXECUTE format('ALTER TABLE mail.inbox ATTACH PARTITION mail.%I FOR VALUES FROM (%L) TO (%L)',
                   'inbox_' || suffix, lo, hi);
    INSERT INTO mail.part (lower, upper, name) VALUES (lo, hi, suffix);
    made := made + 1;
    lo := hi;
  END LOOP;
  RETURN made;
END
$$;

-- Drops the oldest partition whose every message is older than `keep` (call again
-- for the next). Returns how many home messages it held, or NULL when none is due.
CREATE FUNCTION mail.drop_expired_part(keep interval) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
  p mail.part;
  n bigint;
BEGIN
  PERFORM pg_advisory_xact_lock(1768844404, 3);
  SELECT * INTO p FROM mail.part WHERE upper <= now() - keep ORDER BY lower LIMIT 1;
  IF NOT FOUND THEN
    RETURN NULL;
  END IF;
  SELECT coalesce(sum(messages), 0) INTO n FROM mail.tally WHERE part = p.lower;
  EXECUTE format('DROP TABLE mail.%I', 'message_' || p.name);
  EXECUTE format('DROP TABLE mail.%I', 'inbox_' || p.name);
  DELETE FROM mail.tally WHERE part = p.lower;
  DELETE FROM mail.part WHERE lower = p.lower;
  RETURN n;
END
$$;

-- Case folding as search::fold_case does it (ASCII, Latin-1, Latin Extended-A, Greek and
-- Cyrillic capitals; each character keeps its length): the tag comparisons of searches,
-- renames and deletes. The message's other searchable fields are folded by inletd when it
-- stores them (mail.message.fields). Needs a UTF-8 database.
CREATE FUNCTION mail.fold(s text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
  SELECT translate(s,
    'ABCDEFGHIJKLMNOPQRSTUVWXYZÀÁÂÃÄÅÆÇÈÉÊËÌÍÎÏÐÑÒÓÔÕÖØÙÚÛÜÝÞŸĀĂĄĆĈĊČĎĐĒĔĖĘĚĜĞĠĢĤĦĨĪĬĮİĲĴĶŊŌŎŐŒŔŖŘŚŜŞŠŢŤŦŨŪŬŮŰŲŴŶĹĻĽĿŁŃŅŇŹŻŽΑΒΓΔΕΖΗΘΙΚΛΜΝΞΟΠΡΣΤΥΦΧΨΩАБВГДЕЖЗИЙКЛМНОПРСТУФХЦЧШЩЪЫЬЭЮЯЀЁЂЃЄЅІЇЈЉЊЋЌЍЎЏ',
    'abcdefghijklmnopqrstuvwxyzàáâãäåæçèéêëìíîïðñòóôõöøùúûüýþÿāăąćĉċčďđēĕėęěĝğġģĥħĩīĭįıĳĵķŋōŏőœŕŗřśŝşšţťŧũūŭůűųŵŷĺļľŀłńņňźżžαβγδεζηθικλμνξοπρστυφχψωабвгдежзийклмнопрстуфхцчшщъыьэюяѐёђѓєѕіїјљњћќѝўџ')
$$;

-- Listing tags and renaming or deleting one look tagged messages up through this index
-- (most messages have no tag and stay out of it).
CREATE INDEX message_tags ON mail.message USING gin (tags) WHERE tags <> '{}';

-- A tag list with `old` (compared case-insensitively) replaced by `new` (NULL: removed),
-- duplicates (case-insensitive) dropped, first spelling and order kept.
CREATE FUNCTION mail.retag(tags text[], old text, new text) RETURNS text[]
LANGUAGE sql IMMUTABLE AS $$
  SELECT coalesce(array_agg(t ORDER BY ord), '{}')
    FROM (SELECT t, ord, row_number() OVER (PARTITION BY mail.fold(t) ORDER BY ord) AS rn
            FROM (SELECT CASE WHEN mail.fold(x) = mail.fold(old) THEN new ELSE x END AS t, ord
                    FROM unnest(tags) WITH ORDINALITY AS u(x, ord)) a
           WHERE t IS NOT NULL) b
   WHERE rn = 1
$$;

-- Renames (new given) or deletes (new NULL) a tag on every message here. Copies in a
-- bucket being moved are not changed: their IDs come back in `busy` (retry).
CREATE FUNCTION mail.retag_all_v1(old text, new text, channel text, origin text,
                                  OUT changed text[], OUT busy text[])
LANGUAGE plpgsql AS $$
DECLARE
  spellings text[];
BEGIN
  PERFORM mail.ownership_lock_shared();
  SELECT coalesce(array_agg(tag), '{}') INTO spellings FROM mail.tag WHERE mail.fold(tag) = mail.fold(old);
  SELECT coalesce(array_agg(m.id), '{}') INTO busy
    FROM mail.message m
   WHERE m.tags <> '{}' AND m.tags && spellings AND NOT mail.writable(m.buckets);
  IF new IS NOT NULL THEN
    INSERT INTO mail.tag (tag) VALUES (new) ON CONFLICT DO NOTHING;
  END IF;
  WITH u AS (
    UPDATE mail.message m SET tags = mail.retag(m.tags, old, new)
     WHERE m.tags <> '{}' AND m.tags && spellings AND mail.writable(m.buckets)
    RETURNING m.id, m.home
  )
  SELECT coalesce(array_agg(u.id) FILTER (WHERE u.home), '{}') INTO changed FROM u;
  IF cardinality(busy) = 0 THEN
    DELETE FROM mail.tag WHERE tag = ANY (spellings) AND tag IS DISTINCT FROM new;
  END IF;
  PERFORM mail.notify(channel, origin, 't', changed);
END
$$;

-- Deletes every message here (DELETE of everything, no selection). Refused while a
-- bucket is being moved (the move would copy back what this deletes). Returns how many
-- home copies there were.
CREATE FUNCTION mail.clear_v1(channel text, origin text) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
  n bigint;
BEGIN
  PERFORM mail.ownership_lock_shared();
  IF EXISTS (SELECT 1 FROM mail.bucket WHERE state <> 'owned') THEN
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

-- ---- Moving a bucket from shard A to shard B (store/src/pg/admin.cpp runs the steps;
-- ---- docs/store-pg.md, "Adding a shard") ----

-- Messages without recipients, found by their primary bucket when it moves.
CREATE INDEX message_no_rcpt ON mail.message (primary_bucket) WHERE mailboxes = '{}';

-- On B, first: the bucket is arriving (neither readable nor writable here yet).
CREATE FUNCTION mail.expect_bucket_v1(b int) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  s text;
BEGIN
  PERFORM pg_advisory_xact_lock(1768844404, 2);
  INSERT INTO mail.bucket (bucket, state) VALUES (b, 'incoming') ON CONFLICT (bucket) DO NOTHING;
  SELECT state INTO s FROM mail.bucket WHERE bucket = b;
  RETURN s;
END
$$;

-- On A: no more writes to the bucket here (waits for the transactions writing now).
CREATE FUNCTION mail.freeze_bucket_v1(b int, channel text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  s text;
BEGIN
  PERFORM pg_advisory_xact_lock(1768844404, 2);
  UPDATE mail.bucket SET state = 'frozen', changed = now() WHERE bucket = b AND state = 'owned';
  SELECT state INTO s FROM mail.bucket WHERE bucket = b;
  IF channel <> '' THEN
    PERFORM pg_notify(channel, '- m');
  END IF;
  RETURN s;
END
$$;

-- On B: stores copies read from A (never home yet: B's copies become home when B takes
-- the bucket, after A gave its up, so no listing shows a message twice).
CREATE FUNCTION mail.import_v1(msgs mail.new_message_v1[], b int) RETURNS int LANGUAGE plpgsql AS $$
BEGIN
  PERFORM mail.ownership_lock_shared();
  IF NOT EXISTS (SELECT 1 FROM mail.bucket WHERE bucket = b AND state = 'incoming') THEN
    RAISE EXCEPTION 'bucket % is not arriving here', b USING ERRCODE = '55000';
  END IF;
  IF EXISTS (SELECT 1 FROM unnest(msgs) AS m
              WHERE m.home OR EXISTS (SELECT 1 FROM unnest(m.buckets) AS x WHERE x <> b)) THEN
    RAISE EXCEPTION 'import of bucket %: a copy is home or names another bucket', b USING ERRCODE = '22023';
  END IF;
  PERFORM mail.store_copies(msgs);
  RETURN cardinality(msgs);
END
$$;

-- On A: the bucket is gone from here; its home copies stop being home (and counted).
CREATE FUNCTION mail.leave_bucket_v1(b int, channel text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  n bigint;
BEGIN
  PERFORM pg_advisory_xact_lock(1768844404, 2);
  UPDATE mail.bucket SET state = 'gone', changed = now() WHERE bucket = b AND state = 'frozen';
  WITH u AS (
    UPDATE mail.message SET home = false WHERE home AND primary_bucket = b
    RETURNING received, read, size
  ), tl AS (
    INSERT INTO mail.tally (part, messages, unread, bytes)
    SELECT p.lower, -count(*), -count(*) FILTER (WHERE NOT u.read), -sum(u.size)
      FROM u JOIN mail.part p ON u.received >= p.lower AND u.received < p.upper
     GROUP BY p.lower
  )
  SELECT count(*) INTO n FROM u;
  IF channel <> '' THEN
    PERFORM pg_notify(channel, '- m');
  END IF;
  RETURN n;
END
$$;

-- On B: the bucket is here; copies whose primary bucket it is become home.
CREATE FUNCTION mail.take_bucket_v1(b int, channel text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  n bigint;
BEGIN
  PERFORM pg_advisory_xact_lock(1768844404, 2);
  UPDATE mail.bucket SET state = 'owned', changed = now() WHERE bucket = b AND state = 'incoming';
  WITH u AS (
    UPDATE mail.message SET home = true WHERE NOT home AND primary_bucket = b
    RETURNING received, read, size
  ), tl AS (
    INSERT INTO mail.tally (part, messages, unread, bytes)
    SELECT p.lower, count(*), count(*) FILTER (WHERE NOT u.read), sum(u.size)
      FROM u JOIN mail.part p ON u.received >= p.lower AND u.received < p.upper
     GROUP BY p.lower
  )
  SELECT count(*) INTO n FROM u;
  IF channel <> '' THEN
    PERFORM pg_notify(channel, '- m');
  END IF;
  RETURN n;
END
$$;

-- On A, last: removes what the bucket left here (its mailbox rows, its mailboxes from
-- copies shared with other buckets, copies that no mailbox here needs any more).
CREATE FUNCTION mail.release_bucket_v1(b int) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  ids text[];
  rcvd timestamptz[];
  n bigint;
BEGIN
  IF NOT EXISTS (SELECT 1 FROM mail.bucket WHERE bucket = b AND state = 'gone') THEN
    RETURN 0;
  END IF;
  WITH d AS (DELETE FROM mail.inbox WHERE bucket = b RETURNING id, received)
  SELECT array_agg(DISTINCT id), array_agg(DISTINCT received) INTO ids, rcvd FROM d;
  UPDATE mail.message m
     SET mailboxes = ARRAY(SELECT x.mb FROM unnest(m.mailboxes, m.buckets) AS x(mb, bk) WHERE x.bk <> b),
         buckets = array_remove(m.buckets, b)
   WHERE m.id = ANY (coalesce(ids, '{}')) AND m.received = ANY (coalesce(rcvd, '{}'))
     AND m.buckets @> ARRAY[b];
  DELETE FROM mail.message m
   WHERE ((m.id = ANY (coalesce(ids, '{}')) AND m.received = ANY (coalesce(rcvd, '{}')))
          OR (m.primary_bucket = b AND m.mailboxes = '{}'))
     AND m.mailboxes = '{}' AND NOT m.home;
  GET DIAGNOSTICS n = ROW_COUNT;
  DELETE FROM mail.bucket WHERE bucket = b AND state = 'gone';
  RETURN n;
END
$$;
