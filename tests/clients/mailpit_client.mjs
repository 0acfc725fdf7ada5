// The npm `mailpit-api` client (MailpitClient, a library Mailpit users' tests call) driven
// as its README shows, against inletd started with Mailpit's own flags (--enable-chaos).
// Exits non-zero on the first difference; the Python harness (catcher_clients_test.py)
// sends one message over SMTP first.
//
//     node mailpit_client.mjs API_PORT
import assert from 'node:assert/strict'
import { MailpitClient } from 'mailpit-api'

const mailpit = new MailpitClient(`http://127.0.0.1:${process.argv[2]}`)

const info = await mailpit.getInfo()
assert.equal(info.Messages, 1)
assert.equal(typeof (await mailpit.getConfiguration()).DuplicatesIgnored, 'boolean')

const sent = await mailpit.sendMessage({
  From: { Email: 'api@example.org', Name: 'API' },
  To: [{ Email: 'dora@example.com' }],
  Subject: 'Sent through the client',
  Text: 'plain body',
  HTML: '<p>Hello <a href="http://127.0.0.1:9/x">link</a></p>',
  Tags: ['Api'],
  Attachments: [{ Filename: 'a.txt', Content: Buffer.from('attached').toString('base64') }],
})
assert.match(sent.ID, /^[A-Za-z0-9]+$/)
const found = await mailpit.waitForMessage({ query: 'subject:"Sent through the client"' })
assert.equal(found.ID, sent.ID)
assert.equal(found.Attachments.length, 1)

const list = await mailpit.listMessages()
assert.equal(list.messages_count, 2)
assert.equal(list.messages[0].ID, sent.ID)  // newest first
const latest = await mailpit.getMessageSummary()
assert.equal(latest.ID, sent.ID)
assert.equal(latest.Subject, 'Sent through the client')
const headers = await mailpit.getMessageHeaders(sent.ID)
assert.deepEqual(headers.Subject, ['Sent through the client'])
assert.match(await mailpit.getMessageSource(sent.ID), /^(.|\r\n)*Subject: Sent through the client/)
const part = await mailpit.getMessageAttachment(sent.ID, found.Attachments[0].PartID)
assert.equal(await part.text(), 'attached')

assert.match(await mailpit.renderMessageText(sent.ID), /plain body/)
assert.match(await mailpit.renderMessageHTML(sent.ID), /Hello/)
const html = await mailpit.htmlCheck(sent.ID)
assert.equal(typeof html.Total.Nodes, 'number')
const links = await mailpit.linkCheck(sent.ID)
assert.equal(links.Links.length, 1)

assert.equal(await mailpit.setReadStatus({ IDs: [sent.ID], Read: true }), 'ok')
assert.equal((await mailpit.getMessageSummary(sent.ID)).Read, true)
assert.equal(await mailpit.setReadStatus({ Read: false }), 'ok')  // every message
assert.equal((await mailpit.listMessages()).unread, 2)

assert.deepEqual(await mailpit.getTags(), ['Api'])
assert.equal(await mailpit.setTags({ IDs: [sent.ID], Tags: ['One', 'Two'] }), 'ok')
assert.equal(await mailpit.renameTag('Two', 'Three'), 'ok')
assert.deepEqual((await mailpit.getTags()).sort(), ['One', 'Three'])
assert.equal(await mailpit.deleteTag('One'), 'ok')
assert.deepEqual(await mailpit.getTags(), ['Three'])
const tagged = await mailpit.searchMessages({ query: 'tag:Three' })
assert.equal(tagged.messages_count, 1)

const chaos = await mailpit.setChaosTriggers({ Sender: { ErrorCode: 451, Probability: 5 } })
assert.equal(chaos.Sender.Probability, 5)
assert.equal((await mailpit.getChaosTriggers()).Sender.ErrorCode, 451)
await mailpit.setChaosTriggers({})

assert.equal(await mailpit.deleteMessagesBySearch({ query: 'subject:"Sent through the client"' }), 'ok')
assert.equal((await mailpit.listMessages()).messages_count, 1)
assert.equal(await mailpit.deleteMessages(), 'ok')
assert.equal((await mailpit.listMessages()).messages_count, 0)
console.log('mailpit-api client: every call answered as Mailpit answers it')
