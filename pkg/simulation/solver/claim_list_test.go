package solver

// claimList is unexported and has no effect a plan could show apart from speed, so it is tested from
// inside the package, against a plain sorted slice.

import (
	"math/rand"
	"slices"
	"testing"
)

func TestClaimListMatchesSortedSlice(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	types := []pricedType{{typeOption: &typeOption{alloc: vec{4000, 8000}}}, {typeOption: &typeOption{alloc: vec{16000, 64000}}}}
	var ref, out, all []*target
	l := newClaimList(func(id int) *target { return all[id] })
	for step := range 3000 {
		switch {
		case len(ref) > 0 && rng.Intn(3) == 0: // move a claim, as apply does
			c := ref[rng.Intn(len(ref))]
			l.remove(c)
			ref = slices.DeleteFunc(ref, func(t *target) bool { return t == c })
			c.used = vec{rng.Int63n(4000), rng.Int63n(8000)}
			if rng.Intn(2) == 0 {
				l.insert(c)
				ref = append(ref, c)
			} else {
				out = append(out, c)
			}
		case len(out) > 0 && rng.Intn(4) == 0: // put back a claim that was taken out
			c := out[len(out)-1]
			out = out[:len(out)-1]
			l.insert(c)
			ref = append(ref, c)
		default:
			c := &target{id: len(all), kind: kindNewClaim, types: types, cur: rng.Intn(2), used: vec{rng.Int63n(4000), rng.Int63n(8000)}}
			all = append(all, c)
			l.insert(c)
			ref = append(ref, c)
		}
		l.remove(&target{id: -1, kind: kindNewClaim, types: types, used: vec{0, 0}}) // absent: no effect
		slices.SortFunc(ref, func(a, b *target) int { return keyOf(a).compare(keyOf(b)) })
		if step%97 == 0 {
			checkClaimList(t, &l, ref, rng)
		}
	}
	checkClaimList(t, &l, ref, rng)
}

// checkClaimList compares order, length, search and backward iteration with ref, and checks that skipFull
// never passes a claim with room.
func checkClaimList(t *testing.T, l *claimList, ref []*target, rng *rand.Rand) {
	t.Helper()
	var got []*target
	for p := (claimPos{}); l.valid(p); p = l.next(p) {
		got = append(got, l.at(p))
	}
	if !slices.Equal(got, ref) || l.n != len(ref) {
		t.Fatalf("list holds %d claims (n=%d), want %d in slack order", len(got), l.n, len(ref))
	}
	for range 20 {
		cpu := rng.Int63n(17000)
		want := slices.IndexFunc(ref, func(c *target) bool { return c.slack() >= cpu })
		if want < 0 {
			want = len(ref)
		}
		p := l.firstWithSlack(cpu)
		back := 0
		for q, ok := l.prev(p); ok; q, ok = l.prev(q) {
			back++
		}
		if back != want {
			t.Fatalf("firstWithSlack(%d) has %d claims before it, want %d", cpu, back, want)
		}
		extra := vec{rng.Int63n(8000), rng.Int63n(40000)}
		skipped := l.skipFull(p, extra)
		for q := p; q != skipped; q = l.next(q) {
			if c := l.at(q); c.used.fitsWith(extra, c.types[c.cur].alloc) {
				t.Fatalf("skipFull passed claim %d, which has room", c.id)
			}
		}
	}
}
