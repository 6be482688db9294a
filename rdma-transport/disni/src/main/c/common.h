/*
 * Reverb's own native half of DiSNi 2.1 (com.ibm.disni.verbs.impl.NativeDispatcher's 48 native methods),
 * written against libibverbs and librdmacm. Shared helpers: argument checks and exceptions.
 *
 * Contract (learned from DiSNi 2.1's Java classes and kept in the test-scope emulation,
 * rdma-transport/disni/src/test/java/io/reverb/rdma/provider/disni/emu): every handle is the C pointer of an
 * rdma-core object (struct rdma_cm_id *, struct ibv_qp *, ...) passed as a jlong; structures DiSNi writes
 * (ibv_send_wr chains, ibv_recv_wr chains, sockaddr_in, ibv_wc arrays, out-params) are native memory in
 * rdma-core's layout, whose sizes and offsets sizes.c reports. This library keeps no state of its own: every
 * object it creates is handed back to Java, which destroys it.
 */
#ifndef REVERB_DISNI_COMMON_H
#define REVERB_DISNI_COMMON_H

#include <jni.h>
#include <stdint.h>

/* The JNI version DiSNi 2.1's Java half requires (NativeDispatcher.JVERBS_VERSION). */
#define REVERB_DISNI_JNI_VERSION 32

/* libdisni's MAX_SGE: DiSNi's Java half builds at most this many SGEs per work request. */
#define REVERB_DISNI_MAX_SGE 4

/* The JNI name of a NativeDispatcher method: _name becomes Java_..._NativeDispatcher__1name. */
#define DISNI_FN(name) Java_com_ibm_disni_verbs_impl_NativeDispatcher__1##name

/* A jlong handle as a pointer of the given type. */
#define HANDLE(type, value) ((type *)(uintptr_t)(value))
#define TO_HANDLE(pointer) ((jlong)(uintptr_t)(pointer))

/*
 * Throws java.io.IOException("j2c::<what>: <call> failed: <strerror(err)>") unless an exception is pending
 * already. err is a positive errno value (0: the message has no errno part).
 */
void reverb_throw_io(JNIEnv *env, const char *what, const char *call, int err);

/* Throws java.io.IOException("j2c::<what>: <message>") unless an exception is pending already. */
void reverb_throw_io_msg(JNIEnv *env, const char *what, const char *message);

/*
 * Checks that a handle or address argument is not 0; throws IOException naming the argument otherwise.
 * Returns 1 when it is usable.
 */
int reverb_check_handle(JNIEnv *env, const char *what, const char *arg, jlong value);

/* The same check for functions that return an error code instead of throwing: 1 when usable, else 0. */
static inline int reverb_nonzero(jlong value)
{
    return value != 0;
}

/* Waits for fd to become readable: 1 readable, 0 timed out, -1 error (errno set). timeout < 0 waits forever. */
int reverb_wait_readable(int fd, int timeout_ms);

#endif
