/*
 * The sizes and offsets DiSNi 2.1's Java half compares with its own (NativeDispatcher's constructor adopts
 * every native value that differs), and the JNI version it requires.
 */
#include "common.h"

#include <infiniband/verbs.h>
#include <netinet/in.h>
#include <stddef.h>

JNIEXPORT jint JNICALL DISNI_FN(getSockAddrInSize)(JNIEnv *env, jobject self)
{
    (void)env;
    (void)self;
    return (jint)sizeof(struct sockaddr_in);
}

JNIEXPORT jint JNICALL DISNI_FN(getIbvRecvWRSize)(JNIEnv *env, jobject self)
{
    (void)env;
    (void)self;
    return (jint)sizeof(struct ibv_recv_wr);
}

JNIEXPORT jint JNICALL DISNI_FN(getIbvSendWRSize)(JNIEnv *env, jobject self)
{
    (void)env;
    (void)self;
    return (jint)sizeof(struct ibv_send_wr);
}

JNIEXPORT jint JNICALL DISNI_FN(getIbvSgeSize)(JNIEnv *env, jobject self)
{
    (void)env;
    (void)self;
    return (jint)sizeof(struct ibv_sge);
}

JNIEXPORT jint JNICALL DISNI_FN(getIbvWCSize)(JNIEnv *env, jobject self)
{
    (void)env;
    (void)self;
    return (jint)sizeof(struct ibv_wc);
}

JNIEXPORT jint JNICALL DISNI_FN(getRemoteAddressOffset)(JNIEnv *env, jobject self)
{
    (void)env;
    (void)self;
    return (jint)offsetof(struct ibv_send_wr, wr.rdma.remote_addr);
}

JNIEXPORT jint JNICALL DISNI_FN(getRKeyOffset)(JNIEnv *env, jobject self)
{
    (void)env;
    (void)self;
    return (jint)offsetof(struct ibv_send_wr, wr.rdma.rkey);
}

JNIEXPORT jint JNICALL DISNI_FN(getVersion)(JNIEnv *env, jobject self)
{
    (void)env;
    (void)self;
    return REVERB_DISNI_JNI_VERSION;
}

/* The layout DiSNi's Java half writes into: fail the build, not the NIC, if rdma-core ever changes it. */
_Static_assert(offsetof(struct ibv_send_wr, imm_data) == 36, "ibv_send_wr.imm_data moved (Reverb writes byte 36)");
_Static_assert(offsetof(struct ibv_wc, qp_num) == 28, "ibv_wc.qp_num moved (Reverb reads byte 28)");
_Static_assert(sizeof(struct ibv_sge) == 16, "ibv_sge size changed");
