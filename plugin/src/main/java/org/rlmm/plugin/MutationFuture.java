package org.rlmm.plugin;

import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * The future of one mutation as the broker gets it ({@link Caller#mutate}). gRPC's answer
 * arrives on the channel's I/O thread, which must not run the broker's code: stages chained on
 * this future run on the plugin's callback pool. A caller blocked in {@link #get} or
 * {@link #join} (the broker's RemoteLogManager waits so for every add and finish) is woken from
 * the I/O thread directly, without that hop: it waits on a second, private future that only
 * waiters depend on. Completed by the broker's own hand ({@link #complete}, {@link #cancel}, a
 * timeout set with orTimeout) it wakes those waiters too.
 *
 * <p>Why: with a plain CompletableFuture a waiter in get() counts among its dependents, so the
 * answer always went through the pool, one more thread woken per mutation on the way back
 * (docs/BENCHMARKS.md, "Broker plugin": the split of an add + finish).
 */
final class MutationFuture extends CompletableFuture<Void> {
    /** The answer, completed on the I/O thread; only the waiters of get() and join() depend on it. */
    private final CompletableFuture<Void> answer = new CompletableFuture<>();
    private final Executor callbacks;

    MutationFuture(Executor callbacks) {
        this.callbacks = callbacks;
    }

    /**
     * Settles the mutation with the server's answer (failure null: recorded). Waiters wake at
     * once; this future completes here when nothing is chained on it, else on the callback pool
     * (here only when the pool is shut down: the plugin is closing).
     */
    void answer(Throwable failure) {
        if (failure == null) {
            answer.complete(null);
        } else {
            answer.completeExceptionally(failure);
        }
        if (getNumberOfDependents() == 0) {
            publish();
            return;
        }
        try {
            callbacks.execute(this::publish);
        } catch (RejectedExecutionException closing) {
            publish();
        }
    }

    /** Completes this future as the answer did (a no-op when already complete). */
    private void publish() {
        try {
            answer.join();
            super.complete(null);
        } catch (CompletionException e) {
            super.completeExceptionally(e.getCause() != null ? e.getCause() : e);
        } catch (CancellationException e) {
            super.cancel(false);
        }
    }

    @Override
    public Void get() throws InterruptedException, ExecutionException {
        if (!isDone()) {
            try {
                answer.get();
            } catch (ExecutionException | CancellationException e) {
                // answered with a failure: this future says it below
            }
            publish();
        }
        return super.get();
    }

    @Override
    public Void get(long timeout, TimeUnit unit) throws InterruptedException, ExecutionException, TimeoutException {
        if (!isDone()) {
            try {
                answer.get(timeout, unit);
            } catch (ExecutionException | CancellationException e) {
                // answered with a failure: this future says it below
            }
            publish();
        }
        return super.get();
    }

    @Override
    public Void join() {
        if (!isDone()) {
            try {
                answer.join();
            } catch (CompletionException | CancellationException e) {
                // answered with a failure: this future says it below
            }
            publish();
        }
        return super.join();
    }

    // Completed by another hand than the answer's: the waiters on the answer wake too.

    @Override
    public boolean complete(Void value) {
        boolean done = super.complete(value);
        answer.complete(value);
        return done;
    }

    @Override
    public boolean completeExceptionally(Throwable ex) {
        boolean done = super.completeExceptionally(ex);
        answer.completeExceptionally(ex);
        return done;
    }

    @Override
    public boolean cancel(boolean mayInterruptIfRunning) {
        boolean done = super.cancel(mayInterruptIfRunning);
        answer.cancel(mayInterruptIfRunning);
        return done;
    }
}
