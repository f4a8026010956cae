package decide

// NoMemo turns d's memo off: d then decides every query in full.
func NoMemo(d *Decider) { d.memo = nil }

// Memoized reports whether d's memo answers q now.
func Memoized(d *Decider, q *Query) bool {
	var out Outcome
	d.clientOf(q.Remote, q.ECS, &out)
	l := d.src.Locator()
	out.tok = l.Token()
	return out.FromECS && d.memo.answer(d, l, q, &out)
}
