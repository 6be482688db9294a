/*
 * NativeDispatcher's ibverbs entries (libibverbs): protection domains, memory regions, completion channels
 * and queues, posting work requests, and the attributes DiSNi reads from contexts, PDs and QPs.
 */
#define _GNU_SOURCE
#include "common.h"

#include <errno.h>
#include <infiniband/verbs.h>
#include <stdio.h>
#include <string.h>

JNIEXPORT jlong JNICALL DISNI_FN(allocPd)(JNIEnv *env, jobject self, jlong context)
{
    (void)self;
    if (!reverb_check_handle(env, "allocPd", "context", context))
    {
        return -1;
    }
    struct ibv_pd *pd = ibv_alloc_pd(HANDLE(struct ibv_context, context));
    if (pd == NULL)
    {
        reverb_throw_io(env, "allocPd", "ibv_alloc_pd", errno);
        return -1;
    }
    return TO_HANDLE(pd);
}

JNIEXPORT jlong JNICALL DISNI_FN(createCompChannel)(JNIEnv *env, jobject self, jlong context)
{
    (void)self;
    if (!reverb_check_handle(env, "createCompChannel", "context", context))
    {
        return -1;
    }
    struct ibv_comp_channel *channel = ibv_create_comp_channel(HANDLE(struct ibv_context, context));
    if (channel == NULL)
    {
        reverb_throw_io(env, "createCompChannel", "ibv_create_comp_channel", errno);
        return -1;
    }
    return TO_HANDLE(channel);
}

JNIEXPORT jlong JNICALL DISNI_FN(createCQ)(JNIEnv *env, jobject self, jlong context, jlong channel, jint ncqe,
    jint comp_vector)
{
    (void)self;
    if (!reverb_check_handle(env, "createCQ", "context", context))
    {
        return -1;
    }
    if (ncqe <= 0 || comp_vector < 0)
    {
        char message[96];
        snprintf(message, sizeof(message), "%d entries or completion vector %d out of range", (int)ncqe,
            (int)comp_vector);
        reverb_throw_io_msg(env, "createCQ", message);
        return -1;
    }
    /* channel 0: a CQ without a completion channel (polled only) */
    struct ibv_cq *cq = ibv_create_cq(HANDLE(struct ibv_context, context), ncqe, NULL,
        HANDLE(struct ibv_comp_channel, channel), comp_vector);
    if (cq == NULL)
    {
        reverb_throw_io(env, "createCQ", "ibv_create_cq", errno);
        return -1;
    }
    return TO_HANDLE(cq);
}

/*
 * DiSNi 2.1's modifyQP passes no attribute (0) and its signature has no attribute mask, so there is nothing
 * well defined to do: refuse it rather than modify a QP with undefined attributes. rdma_cm moves Reverb's QPs
 * through their states.
 */
JNIEXPORT jint JNICALL DISNI_FN(modifyQP)(JNIEnv *env, jobject self, jlong qp, jlong attr)
{
    (void)self;
    if (!reverb_check_handle(env, "modifyQP", "qp", qp) || !reverb_check_handle(env, "modifyQP", "attribute", attr))
    {
        return -1;
    }
    reverb_throw_io_msg(env, "modifyQP", "not supported (DiSNi 2.1 passes no attribute mask; rdma_cm moves QP states)");
    return -1;
}

JNIEXPORT jlong JNICALL DISNI_FN(regMr)(JNIEnv *env, jobject self, jlong pd, jlong address, jint length,
    jint access, jlong lkey_out, jlong rkey_out, jlong handle_out)
{
    (void)self;
    if (!reverb_check_handle(env, "regMr", "pd", pd) || !reverb_check_handle(env, "regMr", "address", address) ||
        !reverb_check_handle(env, "regMr", "lkey out-param", lkey_out) ||
        !reverb_check_handle(env, "regMr", "rkey out-param", rkey_out) ||
        !reverb_check_handle(env, "regMr", "handle out-param", handle_out))
    {
        return -1;
    }
    if (length < 0)
    {
        reverb_throw_io_msg(env, "regMr", "negative length");
        return -1;
    }
    struct ibv_mr *mr = ibv_reg_mr(HANDLE(struct ibv_pd, pd), HANDLE(void, address), (size_t)length, access);
    if (mr == NULL)
    {
        reverb_throw_io(env, "regMr", "ibv_reg_mr", errno);
        return -1;
    }
    *HANDLE(uint32_t, lkey_out) = mr->lkey;
    *HANDLE(uint32_t, rkey_out) = mr->rkey;
    *HANDLE(uint32_t, handle_out) = mr->handle;
    return TO_HANDLE(mr);
}

/* The device's RC on-demand-paging capabilities (enum ibv_odp_transport_cap_bits), or -1 without ODP. */
JNIEXPORT jint JNICALL DISNI_FN(queryOdpSupport)(JNIEnv *env, jobject self, jlong context)
{
    (void)env;
    (void)self;
    if (!reverb_nonzero(context))
    {
        return -1;
    }
    struct ibv_device_attr_ex attr;
    memset(&attr, 0, sizeof(attr));
    if (ibv_query_device_ex(HANDLE(struct ibv_context, context), NULL, &attr) != 0 ||
        (attr.odp_caps.general_caps & IBV_ODP_SUPPORT) == 0)
    {
        return -1;
    }
    return (jint)attr.odp_caps.per_transport_caps.rc_odp_caps;
}

/* Prefetches an ODP region's range (ibv_advise_mr, which replaced the experimental verb): 0, or -1. */
JNIEXPORT jint JNICALL DISNI_FN(expPrefetchMr)(JNIEnv *env, jobject self, jlong mr, jlong address, jint length)
{
    (void)self;
    if (!reverb_check_handle(env, "expPrefetchMr", "mr", mr) ||
        !reverb_check_handle(env, "expPrefetchMr", "address", address))
    {
        return -1;
    }
    if (length < 0)
    {
        reverb_throw_io_msg(env, "expPrefetchMr", "negative length");
        return -1;
    }
    struct ibv_mr *region = HANDLE(struct ibv_mr, mr);
    struct ibv_sge sge = { .addr = (uint64_t)address, .length = (uint32_t)length, .lkey = region->lkey };
    return ibv_advise_mr(region->pd, IBV_ADVISE_MR_ADVICE_PREFETCH, IBV_ADVISE_MR_FLAG_FLUSH, &sge, 1) == 0 ? 0 : -1;
}

JNIEXPORT void JNICALL DISNI_FN(deregMr)(JNIEnv *env, jobject self, jlong mr)
{
    (void)self;
    if (!reverb_check_handle(env, "deregMr", "mr", mr))
    {
        return;
    }
    int ret = ibv_dereg_mr(HANDLE(struct ibv_mr, mr));
    if (ret != 0)
    {
        reverb_throw_io(env, "deregMr", "ibv_dereg_mr", ret);
    }
}

JNIEXPORT void JNICALL DISNI_FN(postSend)(JNIEnv *env, jobject self, jlong qp, jlong wr_list)
{
    (void)self;
    if (!reverb_check_handle(env, "post_send", "qp", qp) ||
        !reverb_check_handle(env, "post_send", "work request list", wr_list))
    {
        return;
    }
    struct ibv_send_wr *bad = NULL;
    int ret = ibv_post_send(HANDLE(struct ibv_qp, qp), HANDLE(struct ibv_send_wr, wr_list), &bad);
    if (ret != 0)
    {
        /* providers return a positive or a negative errno; the text carries it (ENOMEM: send queue full) */
        reverb_throw_io(env, "post_send", "ibv_post_send", ret);
    }
}

JNIEXPORT void JNICALL DISNI_FN(postRecv)(JNIEnv *env, jobject self, jlong qp, jlong wr_list)
{
    (void)self;
    if (!reverb_check_handle(env, "post_recv", "qp", qp) ||
        !reverb_check_handle(env, "post_recv", "work request list", wr_list))
    {
        return;
    }
    struct ibv_recv_wr *bad = NULL;
    int ret = ibv_post_recv(HANDLE(struct ibv_qp, qp), HANDLE(struct ibv_recv_wr, wr_list), &bad);
    if (ret != 0)
    {
        reverb_throw_io(env, "post_recv", "ibv_post_recv", ret);
    }
}

/*
 * Waits up to timeout_ms (< 0: forever) for the channel's next CQ event and takes it: 0, or -1 on timeout.
 * DiSNi 2.1 does not ask which CQ fired (Reverb gives each channel one CQ and acknowledges on it).
 */
JNIEXPORT jint JNICALL DISNI_FN(getCqEvent)(JNIEnv *env, jobject self, jlong channel, jint timeout_ms)
{
    (void)self;
    if (!reverb_check_handle(env, "getCqEvent", "completion channel", channel))
    {
        return -1;
    }
    struct ibv_comp_channel *events = HANDLE(struct ibv_comp_channel, channel);
    int ready = reverb_wait_readable(events->fd, timeout_ms);
    if (ready == 0)
    {
        return -1;
    }
    if (ready < 0)
    {
        reverb_throw_io(env, "getCqEvent", "poll", errno);
        return -1;
    }
    struct ibv_cq *cq = NULL;
    void *cq_context = NULL;
    if (ibv_get_cq_event(events, &cq, &cq_context) != 0)
    {
        reverb_throw_io(env, "getCqEvent", "ibv_get_cq_event", errno);
        return -1;
    }
    return 0;
}

JNIEXPORT jint JNICALL DISNI_FN(pollCQ)(JNIEnv *env, jobject self, jlong cq, jint ne, jlong wc_list)
{
    (void)self;
    if (!reverb_check_handle(env, "pollCQ", "cq", cq))
    {
        return -1;
    }
    if (ne < 0 || (ne > 0 && wc_list == 0))
    {
        reverb_throw_io_msg(env, "pollCQ", "negative entry count, or no work completion array");
        return -1;
    }
    int polled = ibv_poll_cq(HANDLE(struct ibv_cq, cq), ne, HANDLE(struct ibv_wc, wc_list));
    if (polled < 0)
    {
        /* ibv_poll_cq returns a negative value without a dependable errno (mlx5: -1; some providers: -errno) */
        char message[64];
        snprintf(message, sizeof(message), "ibv_poll_cq failed: returned %d", polled);
        reverb_throw_io_msg(env, "pollCQ", message);
        return -1;
    }
    return polled;
}

JNIEXPORT jint JNICALL DISNI_FN(reqNotifyCQ)(JNIEnv *env, jobject self, jlong cq, jint solicited_only)
{
    (void)self;
    if (!reverb_check_handle(env, "reqNotifyCQ", "cq", cq))
    {
        return -1;
    }
    return ibv_req_notify_cq(HANDLE(struct ibv_cq, cq), solicited_only != 0);
}

JNIEXPORT jint JNICALL DISNI_FN(ackCqEvent)(JNIEnv *env, jobject self, jlong cq, jint events)
{
    (void)env;
    (void)self;
    if (!reverb_nonzero(cq) || events < 0)
    {
        return -EINVAL;
    }
    if (events > 0)
    {
        ibv_ack_cq_events(HANDLE(struct ibv_cq, cq), (unsigned int)events);
    }
    return 0;
}

/* The three destroy calls return libibverbs' answer: 0, or an errno value (EBUSY: still in use). */
JNIEXPORT jint JNICALL DISNI_FN(destroyCompChannel)(JNIEnv *env, jobject self, jlong channel)
{
    (void)env;
    (void)self;
    if (!reverb_nonzero(channel))
    {
        return -EINVAL;
    }
    return ibv_destroy_comp_channel(HANDLE(struct ibv_comp_channel, channel));
}

JNIEXPORT jint JNICALL DISNI_FN(deallocPd)(JNIEnv *env, jobject self, jlong pd)
{
    (void)env;
    (void)self;
    if (!reverb_nonzero(pd))
    {
        return -EINVAL;
    }
    return ibv_dealloc_pd(HANDLE(struct ibv_pd, pd));
}

JNIEXPORT jint JNICALL DISNI_FN(destroyCQ)(JNIEnv *env, jobject self, jlong cq)
{
    (void)env;
    (void)self;
    if (!reverb_nonzero(cq))
    {
        return -EINVAL;
    }
    return ibv_destroy_cq(HANDLE(struct ibv_cq, cq));
}

JNIEXPORT jint JNICALL DISNI_FN(getQpNum)(JNIEnv *env, jobject self, jlong qp)
{
    (void)self;
    if (!reverb_check_handle(env, "getQpNum", "qp", qp))
    {
        return -1;
    }
    return (jint)HANDLE(struct ibv_qp, qp)->qp_num;
}

JNIEXPORT jint JNICALL DISNI_FN(getContextFd)(JNIEnv *env, jobject self, jlong context)
{
    (void)self;
    if (!reverb_check_handle(env, "getContextFd", "context", context))
    {
        return -1;
    }
    return HANDLE(struct ibv_context, context)->cmd_fd;
}

JNIEXPORT jint JNICALL DISNI_FN(getContextNumCompVectors)(JNIEnv *env, jobject self, jlong context)
{
    (void)self;
    if (!reverb_check_handle(env, "getContextNumCompVectors", "context", context))
    {
        return -1;
    }
    return HANDLE(struct ibv_context, context)->num_comp_vectors;
}

JNIEXPORT jint JNICALL DISNI_FN(getPdHandle)(JNIEnv *env, jobject self, jlong pd)
{
    (void)self;
    if (!reverb_check_handle(env, "getPdHandle", "pd", pd))
    {
        return -1;
    }
    return (jint)HANDLE(struct ibv_pd, pd)->handle;
}
