/**
 * What a lister remembers of the logs: which delivery days it follows and has listed in full, on the
 * schedule (ingest/listing/delivery-days.ts); where a shard with no state of its own starts; a state written
 * before delivery days were followed; what the listers know together.
 */
import { describe, expect, it } from 'vitest';
import { DirectoryObjectStore } from '../../../state/object-store/directory-object-store.js';
import { inheritedListing, ListedDays, listingKey, loadListing, NO_LISTING, saveListing, type ListingState } from '../../../ingest/listing/listing-state.js';
import { daysToList, DEFAULT_SCHEDULE, followFrom, isFinal, listingDue, mergeRanges, recordListed, together, type DeliveryDays } from '../../../ingest/listing/delivery-days.js';
import { tempRoots } from '../../support/job-fixture.js';

const root = tempRoots();
const S = DEFAULT_SCHEDULE;
const at = (iso: string): number => Date.parse(iso);
const none: DeliveryDays = { from: null, final: [], listed: {} };

describe('the schedule of full listings', () => {
  it('lists a delivery day in full 2 hours, 1 day and 3 days after it ends; the last makes it final', () => {
    let s: DeliveryDays = { from: '2026-11-01', final: [], listed: {} };
    // Before the day ends nothing is due; at 01:00 the next day, still nothing.
    expect(listingDue(s, '2026-11-01', at('2026-11-02T01:00:00Z'), S)).toBe(false);
    expect(listingDue(s, '2026-11-01', at('2026-11-02T02:30:00Z'), S)).toBe(true);
    s = recordListed(s, ['2026-11-01'], at('2026-11-02T02:30:00Z'), S);
    expect(listingDue(s, '2026-11-01', at('2026-11-02T23:00:00Z'), S)).toBe(false);
    expect(listingDue(s, '2026-11-01', at('2026-11-03T02:30:00Z'), S)).toBe(true);
    s = recordListed(s, ['2026-11-01'], at('2026-11-03T02:30:00Z'), S);
    expect(isFinal(s, '2026-11-01')).toBe(false);
    // Missed nights: one listing after the final one is due is the final one.
    s = recordListed(s, ['2026-11-01'], at('2026-11-09T02:30:00Z'), S);
    expect(isFinal(s, '2026-11-01')).toBe(true);
    expect(s.listed).toEqual({});
    expect(listingDue(s, '2026-11-01', at('2026-12-01T00:00:00Z'), S)).toBe(false);
  });

  it('lists every followed day that is due and every asked-for day never listed, outside the window; merges final days into ranges', () => {
    const s: DeliveryDays = { from: '2026-11-20', final: [['2026-11-20', '2026-11-21']], listed: { '2026-11-22': '2026-11-25T02:30:00.000Z', '2026-11-24': '2026-11-25T02:30:00.000Z' } };
    const now = at('2026-11-26T02:30:00Z');
    // 22: its final listing (3 days after it ends: the 26th, 00:00) is due; 23: never listed; 24: its 1-day listing is due; 25: its 2-hour one.
    expect(daysToList(s, [], null, now, S)).toEqual(['2026-11-22', '2026-11-23', '2026-11-24', '2026-11-25']);
    // At 23:00 on the 25th: the 22nd's final listing is not due yet, nor the 25th's first (it has not ended).
    expect(daysToList(s, [], null, at('2026-11-25T23:00:00Z'), S)).toEqual(['2026-11-23']);
    // The window lists the 25th whole: not again.
    expect(daysToList(s, [], '2026-11-25', now, S)).toEqual(['2026-11-22', '2026-11-23', '2026-11-24']);
    // A backfill of the 1st of October asks for its delivery days (1st to 3rd), never listed.
    expect(daysToList(s, ['2026-10-01'], '2026-11-25', now, S)).toEqual(['2026-10-01', '2026-10-02', '2026-10-03', '2026-11-22', '2026-11-23', '2026-11-24']);
    expect(mergeRanges([['2026-11-05', '2026-11-06'], ['2026-11-01', '2026-11-03'], ['2026-11-04', '2026-11-04'], ['2026-11-09', '2026-11-09']]))
      .toEqual([['2026-11-01', '2026-11-06'], ['2026-11-09', '2026-11-09']]);
  });

  it('follows from the earliest day asked whose delivery days are not all final yet; older ones are listed once and not followed', () => {
    const now = at('2026-11-26T02:30:00Z');
    expect(followFrom(none, ['2026-11-25'], now, S)).toBe('2026-11-25');
    expect(followFrom(none, ['2026-10-01'], now, S)).toBeNull();
    expect(followFrom({ ...none, from: '2026-11-25' }, ['2026-11-22'], now, S)).toBe('2026-11-22');
    expect(followFrom({ ...none, from: '2026-11-25' }, ['2026-11-01'], now, S)).toBe('2026-11-25');
  });

  it('holds a day final for a set of listers only when every one of them has it so', () => {
    const a: DeliveryDays = { from: '2026-11-01', final: [['2026-11-01', '2026-11-10']], listed: { '2026-11-11': '2026-11-12T02:30:00.000Z' } };
    const b: DeliveryDays = { from: '2026-11-03', final: [['2026-11-01', '2026-11-08']], listed: { '2026-11-09': '2026-11-10T02:30:00.000Z', '2026-11-11': '2026-11-12T03:00:00.000Z' } };
    expect(together([a, b])).toEqual({ from: '2026-11-03', final: [['2026-11-01', '2026-11-08']], listed: { '2026-11-09': '2026-11-10T02:30:00.000Z', '2026-11-11': '2026-11-12T02:30:00.000Z' } });
  });
});

describe('a listing state', () => {
  const state = (watermark: string, days: Partial<DeliveryDays> = {}): ListingState => ({ ...NO_LISTING, watermark, from: '2026-11-01', ...days });

  it('written before delivery days were followed, follows every day: those due a final listing before its last full listing are final', async () => {
    const store = new DirectoryObjectStore(root());
    await store.put(listingKey(), Buffer.from(JSON.stringify({ watermark: '2026-11-20T10:00:00.000Z', accounts: [], folders: [''], other: false, fullListingAt: '2026-11-12T08:00:00.000Z' })));
    // The 8th ends on the 9th: its final listing was due on the 12th at 00:00, before the full listing at 08:00.
    expect(await loadListing(store, S)).toEqual({ watermark: '2026-11-20T10:00:00.000Z', from: '2026-11-09', final: [['1970-01-01', '2026-11-08']], listed: {} });
    // A state saved now reads back as saved.
    await saveListing(store, state('2026-11-20T10:00:00.000Z', { final: [['2026-11-01', '2026-11-03']], listed: { '2026-11-04': '2026-11-05T02:30:00.000Z' } }));
    expect(await loadListing(store, S)).toEqual(state('2026-11-20T10:00:00.000Z', { final: [['2026-11-01', '2026-11-03']], listed: { '2026-11-04': '2026-11-05T02:30:00.000Z' } }));
  });

  it('for a shard with none of its own: the earliest watermark of the most advanced complete set of listers; an incomplete set counts for nothing', async () => {
    const store = new DirectoryObjectStore(root());
    expect(await inheritedListing(store, S)).toEqual(NO_LISTING);
    // One process listed to 10:00; two of three shards to 12:00 (the third never ran): the process's.
    await saveListing(store, state('2026-11-20T10:00:00.000Z'), listingKey());
    await saveListing(store, state('2026-11-20T12:00:00.000Z'), listingKey('0-of-3'));
    await saveListing(store, state('2026-11-20T12:00:00.000Z'), listingKey('1-of-3'));
    expect((await inheritedListing(store, S)).watermark).toBe('2026-11-20T10:00:00.000Z');
    // Two shards of two, at 11:00 and 11:30: the earlier; the days both listed in full.
    await saveListing(store, state('2026-11-20T11:30:00.000Z', { final: [['2026-11-01', '2026-11-15']] }), listingKey('0-of-2'));
    await saveListing(store, state('2026-11-20T11:00:00.000Z', { final: [['2026-11-01', '2026-11-14']] }), listingKey('1-of-2'));
    expect(await inheritedListing(store, S)).toEqual(state('2026-11-20T11:00:00.000Z', { final: [['2026-11-01', '2026-11-14']] }));
  });

  it('known to the listers together: a delivery day is final once one complete set has it final; a run\'s own state after its listing counts', async () => {
    const store = new DirectoryObjectStore(root());
    await saveListing(store, state('2026-11-20T11:00:00.000Z', { final: [['2026-11-01', '2026-11-15']] }), listingKey('0-of-2'));
    await saveListing(store, state('2026-11-20T11:00:00.000Z', { final: [['2026-11-01', '2026-11-10']] }), listingKey('1-of-2'));
    const known = await ListedDays.load(store, S);
    expect(known.isFinal('2026-11-10')).toBe(true);
    expect(known.isFinal('2026-11-11')).toBe(false);
    expect(known.waitingFor('2026-11-10')).toEqual([
      { day: '2026-11-11', dueMs: at('2026-11-15T00:00:00Z'), followed: true },
      { day: '2026-11-12', dueMs: at('2026-11-16T00:00:00Z'), followed: true },
    ]);
    const after = await ListedDays.load(store, S, { key: listingKey('1-of-2'), state: state('2026-11-20T11:00:00.000Z', { final: [['2026-11-01', '2026-11-12']] }) });
    expect(after.waitingFor('2026-11-10')).toEqual([]);
    // A day no lister follows waits for a listing no schedule makes.
    expect(known.waitingFor('2026-10-30')).toEqual([{ day: '2026-10-30', dueMs: at('2026-11-03T00:00:00Z'), followed: false }, { day: '2026-10-31', dueMs: at('2026-11-04T00:00:00Z'), followed: false }]);
  });
});
