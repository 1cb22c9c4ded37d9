package solver

import (
	"math"
	"slices"
	"sort"
)

// claimList keeps open claims ordered by cpu slack, then id, so that the tightest fit is found by binary
// search. A claim is removed and re-inserted every time a pod lands on it, in this list and in every
// eligibleList that holds it, so the list is built to make those moves cheap:
//   - it is stored in blocks of bounded size, so a move shifts at most a block, not half the list;
//   - blocks hold each claim's sort key (slack and id) rather than a pointer, so searching reads one array
//     instead of every claim it passes, and shifting entries needs no GC write barriers; lookup turns an
//     id back into its claim.
type claimList struct {
	blocks []claimBlock
	n      int
	lookup func(id int) *target
}

// claimBlock is a run of consecutive claims and the most room any of them has left in each resource of its
// current type, so that a scan for free room can skip a whole block whose claims are all too full.
type claimBlock struct {
	keys []claimKey
	room vec
	// stale is set when a claim that may have set room left; room is then recomputed when next read, since
	// most blocks change many times between scans that read it.
	stale bool
}

// blockSize is the usual block length; a block is split when it reaches twice that.
const blockSize = 64

// claimKey is what claims are ordered by: cpu slack, then id.
type claimKey struct {
	slack int64
	id    int
}

func keyOf(t *target) claimKey { return claimKey{slack: t.slack(), id: t.id} }

func (a claimKey) compare(b claimKey) int {
	if a.slack != b.slack {
		if a.slack < b.slack {
			return -1
		}
		return 1
	}
	return a.id - b.id
}

// claimPos is a position in a claimList; b == len(blocks) is the end.
type claimPos struct{ b, i int }

func newClaimList(lookup func(id int) *target) claimList { return claimList{lookup: lookup} }

// widenRoom raises room to cover what claim t has left in each resource.
func widenRoom(room vec, t *target) {
	alloc := t.types[t.cur].alloc
	for d := range room {
		room[d] = max(room[d], alloc[d]-t.used[d])
	}
}

func (l *claimList) newBlock(keys []claimKey) claimBlock {
	b := claimBlock{keys: keys, room: make(vec, len(l.lookup(keys[0].id).used))}
	l.resetRoom(&b)
	return b
}

// resetRoom recomputes a block's room from its claims.
func (l *claimList) resetRoom(b *claimBlock) {
	b.stale = false
	for d := range b.room {
		b.room[d] = math.MinInt64
	}
	for _, k := range b.keys {
		widenRoom(b.room, l.lookup(k.id))
	}
}

// roomSetBy reports whether claim t has as much room as the block in some resource, so that the block's
// room may shrink without it. Most claims don't, which spares recomputing the block on most removals.
func (b *claimBlock) roomSetBy(t *target) bool {
	alloc := t.types[t.cur].alloc
	for d, r := range b.room {
		if alloc[d]-t.used[d] >= r {
			return true
		}
	}
	return false
}

// search returns the position of the first claim ordered at or after key.
func (l *claimList) search(key claimKey) claimPos {
	b := sort.Search(len(l.blocks), func(b int) bool {
		keys := l.blocks[b].keys
		return keys[len(keys)-1].compare(key) >= 0
	})
	if b == len(l.blocks) {
		return claimPos{b: b}
	}
	keys := l.blocks[b].keys
	return claimPos{b: b, i: sort.Search(len(keys), func(i int) bool { return keys[i].compare(key) >= 0 })}
}

func (l *claimList) insert(t *target) {
	l.n++
	key := keyOf(t)
	if len(l.blocks) == 0 {
		l.blocks = []claimBlock{l.newBlock([]claimKey{key})}
		return
	}
	p := l.search(key)
	if p.b == len(l.blocks) { // after every claim: append to the last block
		p = claimPos{b: p.b - 1, i: len(l.blocks[p.b-1].keys)}
	}
	blk := &l.blocks[p.b]
	blk.keys = slices.Insert(blk.keys, p.i, key)
	if !blk.stale {
		widenRoom(blk.room, t)
	}
	if len(blk.keys) < 2*blockSize {
		return
	}
	// The upper half gets its own backing array, so appends to the lower half can't overwrite it.
	upper := l.newBlock(append(make([]claimKey, 0, 2*blockSize), blk.keys[blockSize:]...))
	l.blocks[p.b] = l.newBlock(blk.keys[:blockSize])
	l.blocks = slices.Insert(l.blocks, p.b+1, upper)
}

// remove takes t out if it is in the list; it must be called before t's slack changes.
func (l *claimList) remove(t *target) {
	p := l.search(keyOf(t))
	if p.b == len(l.blocks) || l.blocks[p.b].keys[p.i].id != t.id {
		return
	}
	l.n--
	blk := &l.blocks[p.b]
	if blk.keys = slices.Delete(blk.keys, p.i, p.i+1); len(blk.keys) > 0 {
		blk.stale = blk.stale || blk.roomSetBy(t)
		return
	}
	l.blocks = slices.Delete(l.blocks, p.b, p.b+1)
}

// firstWithSlack returns the position of the first claim with at least cpu slack.
func (l *claimList) firstWithSlack(cpu int64) claimPos { return l.search(claimKey{slack: cpu, id: -1}) }

func (l *claimList) valid(p claimPos) bool { return p.b < len(l.blocks) }

func (l *claimList) at(p claimPos) *target { return l.lookup(l.blocks[p.b].keys[p.i].id) }

func (l *claimList) next(p claimPos) claimPos {
	if p.i+1 < len(l.blocks[p.b].keys) {
		return claimPos{b: p.b, i: p.i + 1}
	}
	return claimPos{b: p.b + 1}
}

// prev returns the position before p, and false at the start.
func (l *claimList) prev(p claimPos) (claimPos, bool) {
	switch {
	case p.i > 0:
		return claimPos{b: p.b, i: p.i - 1}, true
	case p.b > 0:
		return claimPos{b: p.b - 1, i: len(l.blocks[p.b-1].keys) - 1}, true
	}
	return claimPos{}, false
}

// skipFull moves p past the blocks in which no claim has room for extra in its current type.
func (l *claimList) skipFull(p claimPos, extra vec) claimPos {
	for ; p.b < len(l.blocks); p = (claimPos{b: p.b + 1}) {
		blk := &l.blocks[p.b]
		if blk.stale {
			l.resetRoom(blk)
		}
		if blk.room.covers(extra) {
			return p
		}
	}
	return p
}

// covers reports whether room is at least extra in every resource.
func (room vec) covers(extra vec) bool {
	for d := range room {
		if extra[d] > room[d] {
			return false
		}
	}
	return true
}
