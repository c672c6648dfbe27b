/** Where a shard with no listing state of its own starts: from a complete set of earlier listers only. */
import { describe, expect, it } from 'vitest';
import { DirectoryObjectStore } from '../../state/object-store/directory-object-store.js';
import { inheritedListing, listingKey, NO_LISTING, saveListing, type ListingState } from '../../state/listing-state.js';
import { tempRoots } from '../helpers/job-fixture.js';

const root = tempRoots();
const at = (watermark: string, folders = ['']): ListingState => ({ ...NO_LISTING, watermark, folders });

describe('a shard with no listing state', () => {
  it('starts at the earliest watermark of the most advanced complete set of listers; an incomplete set counts for nothing', async () => {
    const store = new DirectoryObjectStore(root());
    expect(await inheritedListing(store)).toEqual(NO_LISTING);
    // One process listed to 10:00; two of three shards to 12:00 (the third never ran): the process's.
    await saveListing(store, at('2026-11-20T10:00:00.000Z'), listingKey());
    await saveListing(store, at('2026-11-20T12:00:00.000Z'), listingKey('0-of-3'));
    await saveListing(store, at('2026-11-20T12:00:00.000Z'), listingKey('1-of-3'));
    expect((await inheritedListing(store)).watermark).toBe('2026-11-20T10:00:00.000Z');
    // Two shards of two, at 11:00 and 11:30, one of them in a folder: the earlier, both folders.
    await saveListing(store, at('2026-11-20T11:30:00.000Z'), listingKey('0-of-2'));
    await saveListing(store, at('2026-11-20T11:00:00.000Z', ['', 'logs/']), listingKey('1-of-2'));
    expect(await inheritedListing(store)).toMatchObject({ watermark: '2026-11-20T11:00:00.000Z', folders: ['', 'logs/'], other: false });
    // A set in which one lister saw keys of neither shape passes that on (its heirs list in full).
    await saveListing(store, { ...at('2026-11-20T11:00:00.000Z'), other: true }, listingKey('1-of-2'));
    expect((await inheritedListing(store)).other).toBe(true);
  });
});
