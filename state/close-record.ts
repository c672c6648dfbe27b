/**
 * One close's record, read on its own: `report` shows a statement's versions with their reasons and
 * what each changed, which only the record keeps. Read-only: state/closes.ts makes and rewrites it
 * (a close or reopen publishes it).
 */
import { closeKey, type Close } from './closes.js';
import type { ObjectStore } from './object-store/object-store.js';

/** The record of `month` closed in `tz`, or null when it has none. */
export async function readCloseRecord(store: Pick<ObjectStore, 'get'>, month: string, tz: string): Promise<Close | null> {
  const body = await store.get(closeKey(month, tz));
  return body ? (JSON.parse(body.toString('utf8')) as Close) : null;
}
