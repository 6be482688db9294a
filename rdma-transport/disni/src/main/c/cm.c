/*
 * NativeDispatcher's rdma_cm entries (librdmacm): event channels, ids, address and route resolution,
 * connect/accept/disconnect, events, and the QP that rdma_cm creates on an id.
 */
#define _GNU_SOURCE
#include "common.h"

#include <errno.h>
#include <netinet/in.h>
#include <rdma/rdma_cma.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

/* rdma_cm's retry counts travel in 3-bit fields of the CM REQ/REP. */
#define MAX_CM_RETRY 7

/* DiSNi 2.1 is IPv4 only and sizes its buffers for sockaddr_in: anything else would be read past its end. */
static int check_sockaddr_in(JNIEnv *env, const char *what, const char *arg, jlong address)
{
    if (!reverb_check_handle(env, what, arg, address))
    {
        return 0;
    }
    const struct sockaddr_in *in = HANDLE(const struct sockaddr_in, address);
    if (in->sin_family != AF_INET)
    {
        char message[96];
        snprintf(message, sizeof(message), "%s has address family %d, not AF_INET", arg, (int)in->sin_family);
        reverb_throw_io_msg(env, what, message);
        return 0;
    }
    return 1;
}

static int check_retry(JNIEnv *env, const char *what, jint retry, jint rnr_retry)
{
    if (retry < 0 || retry > MAX_CM_RETRY || rnr_retry < 0 || rnr_retry > MAX_CM_RETRY)
    {
        char message[96];
        snprintf(message, sizeof(message), "retry count %d or RNR retry count %d is not within 0..%d", (int)retry,
            (int)rnr_retry, MAX_CM_RETRY);
        reverb_throw_io_msg(env, what, message);
        return 0;
    }
    return 1;
}

JNIEXPORT jlong JNICALL DISNI_FN(createEventChannel)(JNIEnv *env, jobject self)
{
    (void)self;
    struct rdma_event_channel *channel = rdma_create_event_channel();
    if (channel == NULL)
    {
        reverb_throw_io(env, "createEventChannel", "rdma_create_event_channel", errno);
        return -1;
    }
    return TO_HANDLE(channel);
}

JNIEXPORT jlong JNICALL DISNI_FN(createId)(JNIEnv *env, jobject self, jlong channel, jshort port_space)
{
    (void)self;
    if (!reverb_check_handle(env, "createId", "event channel", channel))
    {
        return -1;
    }
    struct rdma_cm_id *id = NULL;
    if (rdma_create_id(HANDLE(struct rdma_event_channel, channel), &id, NULL,
            (enum rdma_port_space)(uint16_t)port_space) != 0)
    {
        reverb_throw_io(env, "createId", "rdma_create_id", errno);
        return -1;
    }
    return TO_HANDLE(id);
}

JNIEXPORT jlong JNICALL DISNI_FN(createQP)(JNIEnv *env, jobject self, jlong id, jlong pd, jlong send_cq,
    jlong recv_cq, jint qp_type, jint max_send_wr, jint max_recv_wr, jint max_inline)
{
    (void)self;
    if (!reverb_check_handle(env, "createQP", "cm id", id) || !reverb_check_handle(env, "createQP", "pd", pd) ||
        !reverb_check_handle(env, "createQP", "send cq", send_cq) ||
        !reverb_check_handle(env, "createQP", "receive cq", recv_cq))
    {
        return -1;
    }
    if (max_send_wr < 0 || max_recv_wr < 0 || max_inline < 0)
    {
        reverb_throw_io_msg(env, "createQP", "negative queue capacity or inline size");
        return -1;
    }
    struct ibv_qp_init_attr attr;
    memset(&attr, 0, sizeof(attr));
    attr.send_cq = HANDLE(struct ibv_cq, send_cq);
    attr.recv_cq = HANDLE(struct ibv_cq, recv_cq);
    attr.qp_type = (enum ibv_qp_type)qp_type;
    attr.cap.max_send_wr = (uint32_t)max_send_wr;
    attr.cap.max_recv_wr = (uint32_t)max_recv_wr;
    attr.cap.max_send_sge = REVERB_DISNI_MAX_SGE;
    attr.cap.max_recv_sge = REVERB_DISNI_MAX_SGE;
    attr.cap.max_inline_data = (uint32_t)max_inline;
    attr.sq_sig_all = 0;
    struct rdma_cm_id *cm_id = HANDLE(struct rdma_cm_id, id);
    if (rdma_create_qp(cm_id, HANDLE(struct ibv_pd, pd), &attr) != 0)
    {
        reverb_throw_io(env, "createQP", "rdma_create_qp", errno);
        return -1;
    }
    return TO_HANDLE(cm_id->qp);
}

JNIEXPORT void JNICALL DISNI_FN(bindAddr)(JNIEnv *env, jobject self, jlong id, jlong address)
{
    (void)self;
    if (!reverb_check_handle(env, "bind", "cm id", id) || !check_sockaddr_in(env, "bind", "address", address))
    {
        return;
    }
    if (rdma_bind_addr(HANDLE(struct rdma_cm_id, id), HANDLE(struct sockaddr, address)) != 0)
    {
        reverb_throw_io(env, "bind", "rdma_bind_addr", errno);
    }
}

JNIEXPORT void JNICALL DISNI_FN(listen)(JNIEnv *env, jobject self, jlong id, jint backlog)
{
    (void)self;
    if (!reverb_check_handle(env, "listen", "cm id", id))
    {
        return;
    }
    if (rdma_listen(HANDLE(struct rdma_cm_id, id), backlog) != 0)
    {
        reverb_throw_io(env, "listen", "rdma_listen", errno);
    }
}

JNIEXPORT void JNICALL DISNI_FN(resolveAddr)(JNIEnv *env, jobject self, jlong id, jlong src, jlong dst,
    jint timeout_ms)
{
    (void)self;
    if (!reverb_check_handle(env, "resolveAddr", "cm id", id) ||
        !check_sockaddr_in(env, "resolveAddr", "destination", dst) ||
        (src != 0 && !check_sockaddr_in(env, "resolveAddr", "source", src)))
    {
        return;
    }
    if (timeout_ms < 0)
    {
        reverb_throw_io_msg(env, "resolveAddr", "negative timeout");
        return;
    }
    if (rdma_resolve_addr(HANDLE(struct rdma_cm_id, id), HANDLE(struct sockaddr, src), HANDLE(struct sockaddr, dst),
            timeout_ms) != 0)
    {
        reverb_throw_io(env, "resolveAddr", "rdma_resolve_addr", errno);
    }
}

JNIEXPORT void JNICALL DISNI_FN(resolveRoute)(JNIEnv *env, jobject self, jlong id, jint timeout_ms)
{
    (void)self;
    if (!reverb_check_handle(env, "resolveRoute", "cm id", id))
    {
        return;
    }
    if (timeout_ms < 0)
    {
        reverb_throw_io_msg(env, "resolveRoute", "negative timeout");
        return;
    }
    if (rdma_resolve_route(HANDLE(struct rdma_cm_id, id), timeout_ms) != 0)
    {
        reverb_throw_io(env, "resolveRoute", "rdma_resolve_route", errno);
    }
}

/*
 * Waits up to timeout_ms (< 0: forever) for the channel's next event, writes its listen id and id (C pointers,
 * 0 where none) to the two out-params and returns its type; -1 on timeout or error. The event is acknowledged
 * here, as DiSNi 2.1's Java half expects (its ackCmEvent has nothing left to do), so its private data is gone.
 */
JNIEXPORT jint JNICALL DISNI_FN(getCmEvent)(JNIEnv *env, jobject self, jlong channel, jlong listen_id_out,
    jlong id_out, jint timeout_ms)
{
    (void)env;
    (void)self;
    if (!reverb_nonzero(channel) || !reverb_nonzero(listen_id_out) || !reverb_nonzero(id_out))
    {
        return -1;
    }
    struct rdma_event_channel *events = HANDLE(struct rdma_event_channel, channel);
    if (reverb_wait_readable(events->fd, timeout_ms) != 1)
    {
        return -1;
    }
    struct rdma_cm_event *event = NULL;
    if (rdma_get_cm_event(events, &event) != 0)
    {
        return -1;
    }
    const jint type = (jint)event->event;
    *HANDLE(jlong, listen_id_out) = TO_HANDLE(event->listen_id);
    *HANDLE(jlong, id_out) = TO_HANDLE(event->id);
    rdma_ack_cm_event(event);
    return type;
}

static void fill_conn_param(struct rdma_conn_param *param, jint retry, jint rnr_retry)
{
    memset(param, 0, sizeof(*param));
    /* As deep as the device allows (librdmacm clamps these to it, and on accept to what the peer asked):
       the engine reads with RDMA READ, which needs both. */
    param->responder_resources = RDMA_MAX_RESP_RES;
    param->initiator_depth = RDMA_MAX_INIT_DEPTH;
    param->retry_count = (uint8_t)retry;
    param->rnr_retry_count = (uint8_t)rnr_retry;
}

JNIEXPORT void JNICALL DISNI_FN(connect)(JNIEnv *env, jobject self, jlong id, jint retry, jint rnr_retry,
    jlong private_data, jbyte private_length)
{
    (void)self;
    if (!reverb_check_handle(env, "connect", "cm id", id) || !check_retry(env, "connect", retry, rnr_retry))
    {
        return;
    }
    const uint8_t length = (uint8_t)private_length;
    if (length > 0 && private_data == 0)
    {
        reverb_throw_io_msg(env, "connect", "private data is null but its length is not 0");
        return;
    }
    struct rdma_conn_param param;
    fill_conn_param(&param, retry, rnr_retry);
    param.private_data = length > 0 ? HANDLE(const void, private_data) : NULL;
    param.private_data_len = length;
    if (rdma_connect(HANDLE(struct rdma_cm_id, id), &param) != 0)
    {
        reverb_throw_io(env, "connect", "rdma_connect", errno);
    }
}

JNIEXPORT void JNICALL DISNI_FN(accept)(JNIEnv *env, jobject self, jlong id, jint retry, jint rnr_retry)
{
    (void)self;
    if (!reverb_check_handle(env, "accept", "cm id", id) || !check_retry(env, "accept", retry, rnr_retry))
    {
        return;
    }
    struct rdma_conn_param param;
    fill_conn_param(&param, retry, rnr_retry);
    if (rdma_accept(HANDLE(struct rdma_cm_id, id), &param) != 0)
    {
        reverb_throw_io(env, "accept", "rdma_accept", errno);
    }
}

/* Nothing to do: getCmEvent acknowledged the event already. */
JNIEXPORT jint JNICALL DISNI_FN(ackCmEvent)(JNIEnv *env, jobject self, jint event)
{
    (void)env;
    (void)self;
    (void)event;
    return 0;
}

JNIEXPORT jint JNICALL DISNI_FN(disconnect)(JNIEnv *env, jobject self, jlong id)
{
    (void)env;
    (void)self;
    if (!reverb_nonzero(id))
    {
        return -EINVAL;
    }
    return rdma_disconnect(HANDLE(struct rdma_cm_id, id)) == 0 ? 0 : -errno;
}

JNIEXPORT jint JNICALL DISNI_FN(destroyEventChannel)(JNIEnv *env, jobject self, jlong channel)
{
    (void)env;
    (void)self;
    if (!reverb_nonzero(channel))
    {
        return -EINVAL;
    }
    rdma_destroy_event_channel(HANDLE(struct rdma_event_channel, channel));
    return 0;
}

JNIEXPORT jint JNICALL DISNI_FN(destroyCmId)(JNIEnv *env, jobject self, jlong id)
{
    (void)env;
    (void)self;
    if (!reverb_nonzero(id))
    {
        return -EINVAL;
    }
    return rdma_destroy_id(HANDLE(struct rdma_cm_id, id)) == 0 ? 0 : -errno;
}

JNIEXPORT jint JNICALL DISNI_FN(destroyQP)(JNIEnv *env, jobject self, jlong id)
{
    (void)env;
    (void)self;
    if (!reverb_nonzero(id))
    {
        return -EINVAL;
    }
    struct rdma_cm_id *cm_id = HANDLE(struct rdma_cm_id, id);
    if (cm_id->qp == NULL)
    {
        return -EINVAL;
    }
    rdma_destroy_qp(cm_id);
    return 0;
}

/* Copies an id's address into DiSNi's sockaddr_in buffer: IPv4 (or not yet bound, all zero) only. */
static jint copy_address(const struct sockaddr *from, jlong address)
{
    if (!reverb_nonzero(address))
    {
        return -EINVAL;
    }
    if (from->sa_family != AF_INET && from->sa_family != AF_UNSPEC)
    {
        return -EAFNOSUPPORT;
    }
    memcpy(HANDLE(void, address), from, sizeof(struct sockaddr_in));
    return 0;
}

JNIEXPORT jint JNICALL DISNI_FN(getSrcAddr)(JNIEnv *env, jobject self, jlong id, jlong address)
{
    (void)env;
    (void)self;
    if (!reverb_nonzero(id))
    {
        return -EINVAL;
    }
    return copy_address(rdma_get_local_addr(HANDLE(struct rdma_cm_id, id)), address);
}

JNIEXPORT jint JNICALL DISNI_FN(getDstAddr)(JNIEnv *env, jobject self, jlong id, jlong address)
{
    (void)env;
    (void)self;
    if (!reverb_nonzero(id))
    {
        return -EINVAL;
    }
    return copy_address(rdma_get_peer_addr(HANDLE(struct rdma_cm_id, id)), address);
}

JNIEXPORT jint JNICALL DISNI_FN(destroyEp)(JNIEnv *env, jobject self, jlong id)
{
    (void)env;
    (void)self;
    if (!reverb_nonzero(id))
    {
        return -EINVAL;
    }
    rdma_destroy_ep(HANDLE(struct rdma_cm_id, id));
    return 0;
}

/* The id's device context (set once its address is bound or resolved), or -1 when it has none yet. */
JNIEXPORT jlong JNICALL DISNI_FN(getContext)(JNIEnv *env, jobject self, jlong id)
{
    (void)self;
    if (!reverb_check_handle(env, "getContext", "cm id", id))
    {
        return -1;
    }
    struct ibv_context *context = HANDLE(struct rdma_cm_id, id)->verbs;
    return context == NULL ? -1 : TO_HANDLE(context);
}
