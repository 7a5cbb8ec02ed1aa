/**
 * The outbox entries a ledger sent to the projection queue and is waiting to
 * hear about (records-queued.ts), kept in the object's memory instead of in
 * the entries' rows (issue 33: an UPDATE of `next_attempt_at`, an indexed
 * column, cost about 2 rows written per entry, some 10 per conversion).
 *
 * Losing this memory is harmless by design: a ledger that is evicted or
 * restarted forgets its holds and sends those entries again, which the
 * consumer makes a no-op (the projection's version guard, the event ids and
 * audit entryids as keys). The alarm still comes back for an entry never
 * acknowledged: the flush schedule arms it for the earliest hold's end
 * (`earliestEnd`), and that alarm is stored, so it also wakes an evicted
 * ledger, which then finds the entries due and sends them again.
 */
/**
 * An entry sent (outbox-entries.ts, SentEntry): its id and ref (an id may be used again: schema step 9), for a
 * reward the version it carried, and the id of the event it carried (a projection entry's conversion.recorded).
 */
interface Sent {
	id: number;
	ref: string;
	version: number | null;
	eventid?: string | null;
}

interface Hold {
	ref: string;
	version: number | null;
	until: number;
	/**
	 * The event a send of the entry carried, until acknowledged or `until`: a later send of the entry at a
	 * newer version leaves it out (records-queued.ts), so a change committed while the event is in flight
	 * does not write it twice; a send lost meanwhile sends it again once its hold ended.
	 */
	event: { eventid: string; until: number } | null;
}

export class InFlight {
	private readonly held = new Map<number, Hold>();

	/** Holds `sent` until `untilMs`; an entry is held only while its version is at most the one sent (outbox-entries.ts, SentEntry). */
	hold(sent: Sent[], untilMs: number): void {
		for (const s of sent) {
			const before = this.held.get(s.id);
			// A send that left the event out (held) keeps the earlier send's hold of it.
			const kept = before && before.ref === s.ref ? before.event : null;
			this.held.set(s.id, {
				ref: s.ref,
				version: s.version,
				until: untilMs,
				event: s.eventid ? { eventid: s.eventid, until: untilMs } : kept,
			});
		}
	}

	/**
	 * The consumer acknowledged these: their entries went (or stay at a newer version, then due at once). An
	 * acknowledgement of an older send than the one held (its version lower) only ends the hold of the event it
	 * carried; one that did not carry the event still held keeps the entry held until that event's hold ends
	 * (the entry stays: deleteAcked), so the entry is not sent again and again without it meanwhile.
	 */
	release(acks: Sent[]): void {
		for (const a of acks) {
			const h = this.held.get(a.id);
			if (!h || h.ref !== a.ref) continue;
			const eventDone = h.event !== null && a.eventid === h.event.eventid;
			if (eventDone) h.event = null;
			if (h.version !== null && a.version !== null && a.version < h.version) continue;
			if (h.event) this.held.set(a.id, { ...h, until: h.event.until });
			else this.held.delete(a.id);
		}
	}

	/** Whether the event `eventid` of entry (id, ref) is carried by a send not yet acknowledged whose hold runs at `nowMs`. */
	eventHeld(id: number, ref: string, eventid: string, nowMs: number): boolean {
		const h = this.held.get(id);
		return h !== undefined && h.ref === ref && h.event?.eventid === eventid && h.event.until > nowMs;
	}

	/**
	 * The holds still running at `nowMs`, as the JSON array of [id, ref, version]
	 * triples that the outbox's due query excludes (outbox.ts, NOT_HELD_SQL).
	 * Ended holds are forgotten here: their entries are due again.
	 */
	heldJson(nowMs: number): string {
		return JSON.stringify(this.running(nowMs).map(([id, h]) => [id, h.ref, h.version]));
	}

	/** When the first running hold ends (epoch ms), or null: the alarm's time for an acknowledgement that never came. */
	earliestEnd(nowMs: number): number | null {
		const ends = this.running(nowMs).map(([, h]) => h.until);
		return ends.length ? Math.min(...ends) : null;
	}

	/** The holds still running at `nowMs`; ended ones are forgotten (their entries are due again). */
	private running(nowMs: number): [number, Hold][] {
		for (const [id, h] of this.held) if (h.until <= nowMs) this.held.delete(id);
		return [...this.held];
	}
}

/** No holds: a flush that sends nothing to the queue (an explicit flush writes D1 itself). */
export const NO_HOLDS = "[]";
