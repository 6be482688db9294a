package io.reverb.rdma.engine;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.ByteBuffer;
import org.junit.jupiter.api.Test;

/**
 * A hostile acceptor's reject text reaches the client's exception, and from there statuses and log lines: its control
 * bytes (terminal escape sequences, line breaks that forge log lines) are replaced.
 */
class HandshakeRejectTextTest
{
    @Test
    void shouldKeepControlBytesOfARejectOutOfTheException()
    {
        final ByteBuffer reject = Handshake.encodeReject(HandshakeException.Reason.OTHER,
            "\u001b]0;pwn\u0007\r\nWARN forged");
        final String message = Handshake.fromReject(reject, "x").getMessage();
        assertThat(message).contains("?]0;pwn???WARN forged");
        assertThat(message.chars()).allMatch(c -> c >= 0x20 && c < 0x7F);
    }
}
