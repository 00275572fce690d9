import type { ExecutionEventKind } from '../../../shared/api/chats.js';
import type { StoredEvent } from '../store/chats.js';

/** The kinds of SPEC.md, in the order an execution emits them. */
export type EventKind = ExecutionEventKind;

/** One event as sent: data is the JSON text, serialized once for the store and every subscriber. */
export type ExecutionEvent = StoredEvent;

export interface Subscriber {
  event(event: ExecutionEvent): void;
  /** The execution ended: no event follows. */
  end(): void;
}

/** Where events are persisted and read back. */
export interface EventStore {
  appendEvent(executionId: string, seq: number, kind: string, data: string, now: number): void;
  eventsAfter(executionId: string, seq: number): StoredEvent[];
}

interface Live {
  seq: number;
  subscribers: Set<Subscriber>;
}

/**
 * Each execution's events: appended to the store, then fanned out to the subscribers attached at that moment.
 * Appending and attaching are both synchronous, so a subscriber that attaches reads every stored event and then
 * receives every later one, with no gap and no repeat, however the two interleave.
 */
export class EventLog {
  private readonly live = new Map<string, Live>();

  constructor(
    private readonly store: EventStore,
    private readonly now: () => number,
  ) {}

  open(executionId: string): void {
    this.live.set(executionId, { seq: 0, subscribers: new Set() });
  }

  isLive(executionId: string): boolean {
    return this.live.has(executionId);
  }

  append(executionId: string, kind: EventKind, data: unknown): ExecutionEvent {
    const live = this.live.get(executionId);
    if (!live) throw new Error(`execution ${executionId} is not open`);
    const event = { seq: live.seq + 1, kind, data: JSON.stringify(data) };
    this.store.appendEvent(executionId, event.seq, kind, event.data, this.now());
    live.seq = event.seq;
    for (const subscriber of live.subscribers) subscriber.event(event);
    return event;
  }

  /** Ends every subscriber of a finished execution. */
  close(executionId: string): void {
    const live = this.live.get(executionId);
    this.live.delete(executionId);
    for (const subscriber of live?.subscribers ?? []) subscriber.end();
  }

  /**
   * A running execution's events after `afterSeq` (0: from the start), then live ones until it ends. Returns the
   * detach function, or undefined when the execution is not running (its stored final state is what to replay).
   */
  attach(executionId: string, subscriber: Subscriber, afterSeq = 0): (() => void) | undefined {
    const live = this.live.get(executionId);
    if (!live) return undefined;
    for (const event of this.store.eventsAfter(executionId, afterSeq)) subscriber.event(event);
    live.subscribers.add(subscriber);
    return () => live.subscribers.delete(subscriber);
  }
}
