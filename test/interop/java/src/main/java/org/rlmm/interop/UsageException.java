package org.rlmm.interop;

/** A bad or missing option of a {@link KafkaRlmmDriver} subcommand (exit status 2). */
final class UsageException extends RuntimeException {
    UsageException(String msg) {
        super(msg);
    }
}
