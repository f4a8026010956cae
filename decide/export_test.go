package decide

// NoMemo turns d's memo off: d then decides every query in full.
func NoMemo(d *Decider) { d.memo = nil }

// Memoized reports whether d's memo answers q now.
func Memoized(d *Decider, q *Query) bool { hit, _ := memoAnswer(d, q); return hit }

// Placed reports whether d's memo knows q's client's location from an
// earlier view, but holds no decision of the view now.
func Placed(d *Decider, q *Query) bool { _, placed := memoAnswer(d, q); return placed }

// memoAnswer is what d's memo says of q now.
func memoAnswer(d *Decider, q *Query) (hit, placed bool) {
	var out Outcome
	d.clientOf(q.Remote, q.ECS, &out)
	l := d.src.Locator()
	out.tok = l.Token()
	if !out.FromECS {
		return false, false
	}
	return d.memo.answer(d, l, q, &out)
}

// MemoEntry is when the entry of d's memo for q's client, record and type
// was made (a stamp for a later view keeps it), whatever its epoch; nil
// when it holds none.
func MemoEntry(d *Decider, q *Query) any {
	var out Outcome
	d.clientOf(q.Remote, q.ECS, &out)
	t := d.memo.tab.Load()
	if t == nil || !out.FromECS {
		return nil
	}
	a := out.Client.As16()
	h := memoHash(&a, q.Record.Hash, q.QType)
	b := h >> (64 - memoBits) * memoWays
	for i := b; i < b+memoWays; i++ {
		var x memoEntry
		if t.slots[i].load(&x) && x.tag == h && x.addr == a && x.name == q.Record.Hash && x.qtype == q.QType {
			return x.seq
		}
	}
	return nil
}
