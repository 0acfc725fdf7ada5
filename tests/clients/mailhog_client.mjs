// The npm `mailhog` client (a library MailHog users' end-to-end tests call) driven as its
// README shows, against an inletd started with MailHog's variables. Exits non-zero on the
// first difference; the Python harness (catcher_clients_test.py) sends the mail first.
//
//     node mailhog_client.mjs API_PORT
import assert from 'node:assert/strict'
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)
const mailhog = require('mailhog')({ host: '127.0.0.1', port: Number(process.argv[2]) })

const all = await mailhog.messages()
assert.equal(all.total, 3)
assert.equal(all.count, 3)
assert.equal(all.items[0].subject, 'Third: attachment')  // latest first
const plain = all.items.find((m) => m.subject === 'First: Grüße')
assert.ok(plain, 'the encoded subject decoded')
assert.match(plain.text, /caf\u00e9 au lait/)
assert.equal(plain.from, 'Ann <ann@example.org>')
assert.equal(plain.to, 'bob@example.com')

const html = all.items.find((m) => m.subject === 'Second: html')
assert.match(html.html, /<b>bold<\/b>/)

const att = all.items[0]
assert.equal(att.attachments.length, 1)
assert.equal(att.attachments[0].name, 'notes.txt')
assert.equal(Buffer.from(att.attachments[0].Body, 'base64').toString(), 'attached notes\n')

const paged = await mailhog.messages(1, 1)
assert.equal(paged.count, 1)
assert.equal(paged.start, 1)
assert.equal(paged.items[0].subject, 'Second: html')

const toCarl = await mailhog.search('carl@example.com', 'to')
assert.deepEqual(toCarl.items.map((m) => m.subject), ['Second: html'])
const fromAnn = await mailhog.search('ann@example.org', 'from')
assert.equal(fromAnn.total, 3)
const containing = await mailhog.search('au lait')
assert.deepEqual(containing.items.map((m) => m.subject), ['First: Grüße'])

assert.equal((await mailhog.latestTo('carl@example.com')).subject, 'Second: html')
assert.equal((await mailhog.latestFrom('ann@example.org')).subject, 'Third: attachment')
assert.equal((await mailhog.latestContaining('notes')).subject, 'Third: attachment')
assert.ok(!(await mailhog.latestTo('nobody@example.com')))  // nothing: a falsy result

await mailhog.deleteMessage(html.ID)
assert.equal((await mailhog.messages()).total, 2)
await mailhog.deleteAll()
assert.equal((await mailhog.messages()).total, 0)
console.log('mailhog client: every call answered as MailHog answers it')
