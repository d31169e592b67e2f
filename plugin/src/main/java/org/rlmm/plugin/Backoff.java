package org.rlmm.plugin;

import java.time.Duration;

/**
 * The doubling pause of every retry loop (finding the server again, re-sending an assignment
 * change), so that the two backoff settings mean one thing. Not thread-safe: each loop owns its own.
 */
final class Backoff {
    private final Duration initial;
    private final Duration max;
    private Duration next;

    /** A backoff from initial (positive) to max (not below it). */
    Backoff(Duration initial, Duration max) {
        if (initial.isNegative() || initial.isZero() || max.compareTo(initial) < 0) {
            throw new IllegalArgumentException("backoff from " + initial + " to " + max);
        }
        this.initial = initial;
        this.max = max;
        this.next = initial;
    }

    /** The pause before the next try; the one after is twice as long, at most the maximum. */
    Duration next() {
        Duration d = next;
        Duration doubled = next.multipliedBy(2);
        next = doubled.compareTo(max) > 0 ? max : doubled;
        return d;
    }

    /** The pause {@link #next} returns next, without taking it. */
    Duration peek() {
        return next;
    }

    /** A try succeeded (or the failure was long ago): the next pause is the initial one again. */
    void reset() {
        next = initial;
    }

    /** Sleeps for the next pause, at most cap; false when interrupted (the flag set again). */
    boolean sleep(Duration cap) {
        Duration d = next();
        if (cap.compareTo(d) < 0) {
            d = cap.isNegative() ? Duration.ZERO : cap;
        }
        try {
            Thread.sleep(d.toMillis());
            return true;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    /** {@link #sleep(Duration)} without a cap. */
    boolean sleep() {
        return sleep(max);
    }
}
