-- inlet PostgreSQL store, schema version 2: the summary's list totals
-- (store::summary::list_totals: how many To, Cc, Bcc, Reply-To and attachment entries a
-- message had when the receive path kept only the first of them).
--
-- One nullable int[] column, {to, cc, bcc, reply_to, attachments}, NULL when every list
-- is whole (nearly every message): such a row costs at most a null bitmap (none when it
-- has a NULL already) and its record 8 bytes on the wire, where five int columns would
-- cost 20 bytes a row and 60 on the wire; a cut list's row holds a 44-byte array. Adding
-- a column without a default changes only the catalog: existing rows read NULL (totals
-- 0) and nothing is rewritten, on the partitioned table and each partition.
--
-- Writers send mail.new_message_v2 (v1 and a totals column) to put_v2 and import_v2;
-- put_v1 and import_v1 stay for binaries of schema version 1, their copies stored with
-- no totals.

ALTER TABLE mail.message ADD COLUMN totals int[];

-- What a writer sends: one element per message copy (binary, encoded by inletd).
CREATE TYPE mail.new_message_v2 AS (
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
  raw bytea,
  totals int[]
);

-- mail.store_copies (version 1) for the new record: the same, with the totals.
CREATE FUNCTION mail.store_copies(msgs mail.new_message_v2[]) RETURNS text[]
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
                                fields, size, tags, read, raw, totals)
      SELECT m.id, m.received, m.created, m.home, m.primary_bucket, m.mailboxes, m.buckets, m.helo,
             m.mail_from, m.rcpt_to, m.remote, m.protocol, m.auth_user, m.from_addr,
             m.to_addrs, m.cc_addrs, m.bcc_addrs, m.reply_to_addrs, m.subject, m.sent,
             m.message_id, m.snippet, m.attachments, m.inline_parts, m.search_text,
             m.fields, m.size, m.tags, m.read, m.raw, m.totals
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
                              fields, size, tags, read, raw, totals)
    SELECT m.id, m.received, m.created, m.home, m.primary_bucket, m.mailboxes, m.buckets, m.helo,
           m.mail_from, m.rcpt_to, m.remote, m.protocol, m.auth_user, m.from_addr,
           m.to_addrs, m.cc_addrs, m.bcc_addrs, m.reply_to_addrs, m.subject, m.sent,
           m.message_id, m.snippet, m.attachments, m.inline_parts, m.search_text,
           m.fields, m.size, m.tags, m.read, m.raw, m.totals
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

-- Copies from older binaries: stored with no totals through the function above.
CREATE OR REPLACE FUNCTION mail.store_copies(msgs mail.new_message_v1[]) RETURNS text[]
LANGUAGE sql AS $$
  SELECT mail.store_copies(ARRAY(SELECT ROW(m.*, NULL)::mail.new_message_v2 FROM unnest(msgs) AS m))
$$;

-- mail.put_v1 for the new record.
CREATE FUNCTION mail.put_v2(msgs mail.new_message_v2[], copy_of int[], bucket_of int[],
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

-- mail.import_v1 for the new record.
CREATE FUNCTION mail.import_v2(msgs mail.new_message_v2[], b int) RETURNS int LANGUAGE plpgsql AS $$
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
