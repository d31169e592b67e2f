package org.rlmm.plugin;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.server.log.remote.storage.RemoteStorageException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A mutation's future: a waiter in get() or join() is woken by the answer itself, a stage chained
 * on the future runs on the callback pool and never on the answering (I/O) thread, a failure
 * reaches every way of waiting as the same cause, and the broker's own completion (cancel,
 * orTimeout) wakes a waiter although no answer came.
 */
class MutationFutureTest {
    private final ExecutorService callbacks = Executors.newSingleThreadExecutor(Channels.daemon("test-callback"));
    private final ExecutorService waiters = Executors.newCachedThreadPool(Channels.daemon("test-waiter"));

    @AfterEach
    void stop() {
        callbacks.shutdownNow();
        waiters.shutdownNow();
    }

    /** Answers f from a thread of its own named like the channel's I/O thread; returns that thread. */
    private static Thread answerFrom(MutationFuture f, Throwable failure) throws InterruptedException {
        Thread t = new Thread(() -> f.answer(failure), "test-io");
        t.start();
        t.join(10_000);
        return t;
    }

    /** Runs wait on a thread of its own and returns once that thread is parked in it. */
    private Future<Void> parkedIn(java.util.concurrent.Callable<Void> wait) {
        java.util.concurrent.atomic.AtomicReference<Thread> waiter = new java.util.concurrent.atomic.AtomicReference<>();
        Future<Void> waiting = waiters.submit(() -> {
            waiter.set(Thread.currentThread());
            return wait.call();
        });
        long by = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (true) {
            Thread t = waiter.get();
            if (t != null && (t.getState() == Thread.State.WAITING || t.getState() == Thread.State.TIMED_WAITING)) {
                break;
            }
            assertTrue(System.nanoTime() < by, "the waiter did not park within 10 s");
            Thread.onSpinWait();
        }
        assertTrue(!waiting.isDone(), "the waiter returned before any answer");
        return waiting;
    }

    @Test
    void aWaiterInGetIsWokenByTheAnswerItselfWhileThePoolIsBusy() throws Exception {
        java.util.concurrent.CountDownLatch release = new java.util.concurrent.CountDownLatch(1);
        callbacks.execute(() -> {
            try {
                release.await(); // the pool's one thread is busy: only the answering thread can wake the waiter
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        try {
            MutationFuture f = new MutationFuture(callbacks);
            Future<Void> waiting = parkedIn(f::get);
            answerFrom(f, null);
            assertNull(waiting.get(10, TimeUnit.SECONDS));
            assertTrue(f.isDone() && !f.isCompletedExceptionally());
        } finally {
            release.countDown();
        }
    }

    @Test
    void aChainedStageRunsOnTheCallbackPoolNotOnTheAnsweringThread() throws Exception {
        MutationFuture f = new MutationFuture(callbacks);
        CompletableFuture<String> ranOn = f.thenApply(v -> Thread.currentThread().getName());
        Thread io = answerFrom(f, null);
        String name = ranOn.get(10, TimeUnit.SECONDS);
        assertNotEquals(io.getName(), name);
        assertTrue(name.startsWith("test-callback"), name);
    }

    @Test
    void aFailureReachesGetJoinAndChainedStagesAsTheSameCause() throws Exception {
        RemoteStorageException cause = new RemoteStorageException("refused");
        MutationFuture f = new MutationFuture(callbacks);
        Future<Void> waiting = parkedIn(() -> f.get(10, TimeUnit.SECONDS));
        CompletableFuture<Throwable> chained = f.handle((v, err) -> err);
        answerFrom(f, cause);
        ExecutionException e = assertThrows(ExecutionException.class, () -> waiting.get(10, TimeUnit.SECONDS));
        assertInstanceOf(ExecutionException.class, e.getCause());
        assertSame(cause, e.getCause().getCause());
        assertSame(cause, assertThrows(CompletionException.class, f::join).getCause());
        assertSame(cause, assertThrows(ExecutionException.class, f::get).getCause());
        assertSame(cause, chained.get(10, TimeUnit.SECONDS));
    }

    @Test
    void aCancelWakesAWaiterThatNoAnswerReached() throws Exception {
        MutationFuture f = new MutationFuture(callbacks);
        Future<Void> waiting = parkedIn(f::get);
        assertTrue(f.cancel(false));
        ExecutionException e = assertThrows(ExecutionException.class, () -> waiting.get(10, TimeUnit.SECONDS));
        assertInstanceOf(CancellationException.class, e.getCause());
        f.answer(null); // the server's late answer changes nothing
        assertTrue(f.isCancelled());
    }

    @Test
    void orTimeoutWakesAWaiterInJoin() throws Exception {
        MutationFuture f = new MutationFuture(callbacks);
        f.orTimeout(50, TimeUnit.MILLISECONDS);
        Future<Void> waiting = waiters.submit(() -> f.join());
        ExecutionException e = assertThrows(ExecutionException.class, () -> waiting.get(10, TimeUnit.SECONDS));
        assertInstanceOf(CompletionException.class, e.getCause());
        assertInstanceOf(TimeoutException.class, e.getCause().getCause());
    }

    @Test
    void aTimedGetWithoutAnswerTimesOutAndLeavesTheFutureOpen() {
        MutationFuture f = new MutationFuture(callbacks);
        assertThrows(TimeoutException.class, () -> f.get(20, TimeUnit.MILLISECONDS));
        assertTrue(!f.isDone());
        f.answer(null);
        assertTrue(f.isDone());
    }

    @Test
    void anAnswerAfterThePoolStoppedStillCompletesChainedStages() throws Exception {
        MutationFuture f = new MutationFuture(callbacks);
        CompletableFuture<Integer> chained = f.thenApply(v -> 7);
        callbacks.shutdownNow();
        answerFrom(f, null);
        assertEquals(7, chained.get(10, TimeUnit.SECONDS));
    }
}
