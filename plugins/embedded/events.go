package embedded

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/memex-dev/memex/core"
)

// The events bucket remembers the result of every event (a write's event
// id) for core.EventWindow. Its keys start with the start of the time slot
// the event was applied in, so that the expired ones are the first keys
// and a write deletes them as it goes (pruneEvents).
const (
	// eventSlot is a quarter of the window: an event id is looked up in
	// its slot and the four before it that the window reaches, and pruned
	// once its whole slot is out of the window, between one window and a
	// window and a quarter after it was applied.
	eventSlot = core.EventWindow / 4
	// eventPruneMax bounds the expired events one write deletes.
	eventPruneMax = 256
)

// bEventsV2 is the events bucket of a store written before events had a
// time (kind 0 project 0 event_id → JSON result). Its events are given the
// time of the first write that finds it (meta keyEventsV2), are looked up
// until a window after that, then pruned, and the bucket dropped.
var (
	bEventsV2     = []byte("events")
	keyEventsV2   = []byte("events_v2_since")
	eventSlotSecs = uint32(eventSlot / time.Second)
)

// slotOf is the start of the slot holding t, in Unix seconds.
func slotOf(t time.Time) uint32 {
	s := uint32(max(t.Unix(), 0))
	return s - s%eventSlotSecs
}

// eventKey is the key of an event in the events bucket: four bytes for
// its slot, which the caller fills, then kind 0 project 0 event_id.
func eventKey(kind, project, eventID string) []byte {
	k := make([]byte, 4, 4+len(kind)+len(project)+len(eventID)+2)
	k = append(k, kind...)
	k = append(k, 0)
	k = append(k, project...)
	k = append(k, 0)
	return append(k, eventID...)
}

// findEvent returns the stored result of the event key (eventKey, its slot
// bytes free) applied within the window before now, or nil. One cursor
// seeks every slot (a Get would allocate a cursor per slot).
func findEvent(tx *bolt.Tx, now time.Time, key []byte) []byte {
	c := tx.Bucket(bEvents).Cursor()
	oldest := slotOf(now.Add(-core.EventWindow))
	for slot := slotOf(now); ; slot -= eventSlotSecs {
		binary.BigEndian.PutUint32(key, slot)
		if k, v := c.Seek(key); bytes.Equal(k, key) {
			return v
		}
		if slot <= oldest || slot < eventSlotSecs {
			break
		}
	}
	if old := tx.Bucket(bEventsV2); old != nil {
		return old.Get(key[4:])
	}
	return nil
}

// once runs fn, the body of an event's transaction, once per event: the
// result of an event seen within the window (same kind, project and event
// id) is the one stored then, and fn does not run; a new event's result is
// stored with it, in the slot of now. Without an event id, fn runs every
// time.
func once[T any](tx *bolt.Tx, now time.Time, kind, project, eventID string, fn func() (T, error)) (T, error) {
	if eventID == "" {
		return fn()
	}
	key := eventKey(kind, project, eventID)
	var out T
	if v := findEvent(tx, now, key); v != nil {
		if err := json.Unmarshal(v, &out); err != nil {
			return out, fmt.Errorf("stored event result is corrupt: %w", err)
		}
		return out, nil
	}
	out, err := fn()
	if err != nil {
		return out, err
	}
	v, err := json.Marshal(out)
	if err != nil {
		return out, err
	}
	binary.BigEndian.PutUint32(key, slotOf(now))
	return out, tx.Bucket(bEvents).Put(key, v)
}

// pruneEvents deletes up to eventPruneMax events whose slot is out of the
// window: the first keys of the events bucket, then, a window after the
// first write that found them, those of a store written before events had
// a time (bEventsV2), dropping their bucket once it is empty.
func pruneEvents(tx *bolt.Tx, now time.Time) error {
	oldest := binary.BigEndian.AppendUint32(nil, slotOf(now.Add(-core.EventWindow)))
	n, err := deleteFrom(tx.Bucket(bEvents), nil, eventPruneMax, func(k []byte) bool { return bytes.Compare(k, oldest) < 0 })
	old := tx.Bucket(bEventsV2)
	if err != nil || old == nil || n == eventPruneMax {
		return err
	}
	meta := tx.Bucket(bMeta)
	since := meta.Get(keyEventsV2)
	if len(since) != 8 {
		return meta.Put(keyEventsV2, binary.BigEndian.AppendUint64(nil, uint64(now.Unix())))
	}
	if now.Unix() < int64(binary.BigEndian.Uint64(since))+int64(core.EventWindow/time.Second) {
		return nil
	}
	if _, err := deleteFrom(old, nil, eventPruneMax-n, func([]byte) bool { return true }); err != nil {
		return err
	}
	if k, _ := old.Cursor().First(); k != nil {
		return nil
	}
	if err := tx.DeleteBucket(bEventsV2); err != nil {
		return err
	}
	return meta.Delete(keyEventsV2)
}

// deleteFrom deletes the keys of b from the first at or after from (nil:
// the first key) while del holds, at most limit, and returns how many it
// deleted.
func deleteFrom(b *bolt.Bucket, from []byte, limit int, del func(k []byte) bool) (int, error) {
	var dead [][]byte
	c := b.Cursor()
	k, _ := c.First()
	if from != nil {
		k, _ = c.Seek(from)
	}
	for ; k != nil && len(dead) < limit && del(k); k, _ = c.Next() {
		dead = append(dead, bytes.Clone(k))
	}
	for _, k := range dead {
		if err := b.Delete(k); err != nil {
			return 0, err
		}
	}
	return len(dead), nil
}
