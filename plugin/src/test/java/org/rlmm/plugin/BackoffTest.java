package org.rlmm.plugin;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** The one backoff of every retry loop: doubling from the initial pause to the maximum, reset by a success. */
class BackoffTest {
    static Stream<Arguments> sequences() {
        return Stream.of(
                Arguments.of(100L, 10_000L, List.of(100L, 200L, 400L, 800L, 1600L, 3200L, 6400L, 10_000L, 10_000L)),
                Arguments.of(100L, 100L, List.of(100L, 100L, 100L)),
                Arguments.of(3L, 10L, List.of(3L, 6L, 10L, 10L)),
                Arguments.of(1L, 4L, List.of(1L, 2L, 4L, 4L)));
    }

    @ParameterizedTest(name = "{0} to {1} ms")
    @MethodSource("sequences")
    void doublesUpToTheMaximum(long initial, long max, List<Long> want) {
        Backoff b = new Backoff(Duration.ofMillis(initial), Duration.ofMillis(max));
        List<Long> got = new ArrayList<>();
        for (int i = 0; i < want.size(); i++) {
            assertEquals(b.peek(), Duration.ofMillis(want.get(i)), "peek shows the pause next returns");
            got.add(b.next().toMillis());
        }
        assertEquals(want, got);
    }

    @Test
    void aResetStartsOverAtTheInitialPause() {
        Backoff b = new Backoff(Duration.ofMillis(100), Duration.ofMillis(1000));
        b.next();
        b.next();
        b.next();
        b.reset();
        assertEquals(Duration.ofMillis(100), b.next());
        assertEquals(Duration.ofMillis(200), b.next());
    }

    static Stream<Arguments> badBounds() {
        return Stream.of(Arguments.of(0L, 10L), Arguments.of(-1L, 10L), Arguments.of(20L, 10L));
    }

    @ParameterizedTest(name = "{0} to {1} ms")
    @MethodSource("badBounds")
    void badBoundsAreRefused(long initial, long max) {
        assertThrows(IllegalArgumentException.class, () -> new Backoff(Duration.ofMillis(initial), Duration.ofMillis(max)));
    }

    @Test
    void sleepIsCappedAndStillAdvances() {
        Backoff b = new Backoff(Duration.ofSeconds(30), Duration.ofSeconds(60));
        long t0 = System.nanoTime();
        assertTrue(b.sleep(Duration.ofMillis(5)));
        assertTrue(System.nanoTime() - t0 < Duration.ofSeconds(10).toNanos(), "the cap bounds the sleep");
        assertEquals(Duration.ofSeconds(60), b.peek(), "the capped pause counted as a try");
        assertTrue(b.sleep(Duration.ofMillis(-5)), "a cap already past sleeps not at all");
    }

    @Test
    void anInterruptedSleepSaysSoAndKeepsTheFlag() {
        Backoff b = new Backoff(Duration.ofSeconds(30), Duration.ofSeconds(60));
        Thread.currentThread().interrupt();
        try {
            assertFalse(b.sleep());
            assertTrue(Thread.currentThread().isInterrupted());
        } finally {
            Thread.interrupted();
        }
    }
}
