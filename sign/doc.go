// Package sign signs gslb's answers online with DNSSEC.
//
// It loads a zone's BIND-format key files (as CoreDNS's dnssec plugin takes
// them), answers the apex DNSKEY RRset, and adds RRSIGs to every RRset of a
// reply. It denies existence with a Chain, an NSEC or NSEC3 chain over the
// zone's names built and signed once per node table (NewChain; Deny, or
// AppendDenial for the bytes), or with NSEC black lies where the names are
// not all known: an NXDOMAIN becomes a NODATA whose NSEC covers only the
// query name, signed per name. The signing follows
// CoreDNS's plugin/dnssec (the same RRSIG fields, validity and choice of
// key: KSK for DNSKEY, ZSK for the rest when both exist) but for the
// RRSIG's original TTL, which is the RRset's own TTL rather than a fixed
// 3600, so that a validating resolver keeps a longer TTL intact. The black
// lies follow plugin/dnssec too, with HTTPS and
// SVCB added to the NSEC type bitmap (a resolver keeping an NSEC denies
// every type it does not name) and no delegation bitmap for DS. This
// package adds a per-RRset signature cache keyed without allocating, so an
// answer whose RRsets were signed before costs no signing. The key covers
// the TTL: with an adaptive ttl (MAX MIN) an RRset is signed once per TTL
// it goes out with.
//
// Signatures run from 3 hours before signing to 8 days after it and are
// refreshed once fewer than 47 hours remain. A Signer is shared process-wide
// by the identity of its zone and key files' contents, so a reload that
// keeps the keys keeps the cached signatures.
//
// # Use
//
// At setup, `dnssec KEYFILE... [publish KEYFILE...]` in the gslb block goes
// through ParseArgs and Load, giving a Signer per zone. On the query path,
// when the query's OPT has the DO bit: a DNSKEY query for the apex is
// answered by DNSKEY; any other reply, once built (RRs, SOA, OPT with the
// ECS option), goes through Sign just before it is written. Sign skips the
// OPT, so it may come before or after the ECS option is added, but after
// anything else is put in the additional section.
//
// # Key rollover
//
// Keys are files; a rollover is a sequence of reloads, each waiting out the
// TTLs (the DNSKEY TTL, the longest TTL of the zone's answers, and the DS
// TTL in the parent) before the next step:
//
//   - ZSK, pre-publish: list the new key under Publish: it appears in the
//     DNSKEY RRset but signs nothing. After the DNSKEY TTL, move it to Keys
//     and the old one to Publish: answers are signed with the new key, the
//     old one stays published for signatures resolvers still cache. After
//     the longest answer TTL, drop the old key.
//   - ZSK, double signature: add the new key to Keys; every RRset is then
//     signed by both. After the DNSKEY TTL and the longest answer TTL,
//     remove the old key.
//   - KSK or CSK, double DS: add the new key to Keys (both sign the DNSKEY
//     RRset; a CSK signs everything), publish its DS in the parent, wait for
//     the DS TTL, withdraw the old DS, wait again, remove the old key.
//
// Each change of a key file makes a new Signer with an empty cache: the
// first answers after it are signed afresh.
package sign
