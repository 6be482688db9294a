package io.reverb.rdma.provider.disni.emu;

/**
 * The C structures DiSNi's Java half writes into (and reads from) native memory, as libdisni built against
 * <b>rdma-core 44</b> ({@code infiniband/verbs.h}, {@code netinet/in.h}) on x86-64 (LP64, little-endian) lays
 * them out. These are the answers libdisni's size and offset queries give there ({@code sizeof},
 * {@code offsetof}); {@code EmulatedDeviceTest} checks every offset the emulated device reads against what DiSNi's
 * Java classes write.
 *
 * <pre>
 * struct ibv_sge      { uint64_t addr; uint32_t length; uint32_t lkey; }                          16 bytes
 * struct ibv_recv_wr  { uint64_t wr_id; ibv_recv_wr *next; ibv_sge *sg_list; int num_sge; }        32 bytes
 * struct ibv_send_wr  { uint64_t wr_id; ibv_send_wr *next; ibv_sge *sg_list; int num_sge;
 *                       enum ibv_wr_opcode opcode; unsigned send_flags;
 *                       union { __be32 imm_data; uint32_t invalidate_rkey; };                      @36
 *                       union { rdma { uint64_t remote_addr; uint32_t rkey; }                      @40, @48
 *                               atomic { remote_addr, compare_add, swap, rkey } (32 bytes)
 *                               ud { ibv_ah *ah; uint32_t remote_qpn, remote_qkey; } } wr;
 *                       union { xrc { uint32_t remote_srqn; } } qp_type;                           @72
 *                       union { bind_mw { ibv_mw *mw; uint32_t rkey; ibv_mw_bind_info bind_info; }
 *                               tso { void *hdr; uint16_t hdr_sz; uint16_t mss; } }; }            @80, 128 bytes
 * struct ibv_wc       { uint64_t wr_id; enum status; enum opcode; uint32_t vendor_err, byte_len;
 *                       union { __be32 imm_data; uint32_t invalidated_rkey; }; uint32_t qp_num, src_qp;
 *                       unsigned wc_flags; uint16_t pkey_index, slid; uint8_t sl, dlid_path_bits; } 48 bytes
 * struct sockaddr_in  { sa_family_t sin_family; in_port_t sin_port; struct in_addr sin_addr;
 *                       unsigned char sin_zero[8]; }                                              16 bytes
 * </pre>
 *
 * <p>DiSNi 2.1's Java half assumes 72 bytes for {@code ibv_send_wr} (the size before rdma-core grew the
 * {@code qp_type} and {@code bind_mw}/{@code tso} unions) and 28 for {@code sockaddr_in} (the size of
 * {@code sockaddr_in6}); its {@code NativeDispatcher} constructor logs "size mismatch" and adopts the native
 * sizes, which is what the emulated dispatcher makes it do as well.
 */
public final class VerbsLayout
{
    /** The rdma-core release whose headers these values come from. */
    public static final int RDMA_CORE_VERSION = 44;

    public static final int SOCKADDR_IN_SIZE = 16;
    public static final int SOCKADDR_IN_PORT = 2;
    public static final int SOCKADDR_IN_ADDR = 4;
    public static final short AF_INET = 2;

    public static final int SGE_SIZE = 16;
    public static final int SGE_ADDR = 0;
    public static final int SGE_LENGTH = 8;
    public static final int SGE_LKEY = 12;

    public static final int RECV_WR_SIZE = 32;
    public static final int RECV_WR_ID = 0;
    public static final int RECV_WR_NEXT = 8;
    public static final int RECV_WR_SG_LIST = 16;
    public static final int RECV_WR_NUM_SGE = 24;

    public static final int SEND_WR_SIZE = 128;
    public static final int SEND_WR_ID = 0;
    public static final int SEND_WR_NEXT = 8;
    public static final int SEND_WR_SG_LIST = 16;
    public static final int SEND_WR_NUM_SGE = 24;
    public static final int SEND_WR_OPCODE = 28;
    public static final int SEND_WR_SEND_FLAGS = 32;
    public static final int SEND_WR_IMM_DATA = 36;
    public static final int SEND_WR_REMOTE_ADDR = 40;
    public static final int SEND_WR_RKEY = 48;

    public static final int WC_SIZE = 48;
    public static final int WC_WR_ID = 0;
    public static final int WC_STATUS = 8;
    public static final int WC_OPCODE = 12;
    public static final int WC_VENDOR_ERR = 16;
    public static final int WC_BYTE_LEN = 20;
    public static final int WC_IMM_DATA = 24;
    public static final int WC_QP_NUM = 28;
    public static final int WC_SRC_QP = 32;
    public static final int WC_FLAGS = 36;
    public static final int WC_PKEY_INDEX = 40;
    public static final int WC_SLID = 42;
    public static final int WC_SL = 44;
    public static final int WC_DLID_PATH_BITS = 45;

    // enum ibv_wr_opcode
    public static final int WR_RDMA_WRITE = 0;
    public static final int WR_RDMA_WRITE_WITH_IMM = 1;
    public static final int WR_SEND = 2;
    public static final int WR_SEND_WITH_IMM = 3;
    public static final int WR_RDMA_READ = 4;

    // enum ibv_send_flags
    public static final int SEND_FENCE = 1;
    public static final int SEND_SIGNALED = 2;
    public static final int SEND_SOLICITED = 4;
    public static final int SEND_INLINE = 8;

    // enum ibv_wc_opcode
    public static final int WC_OP_SEND = 0;
    public static final int WC_OP_RDMA_WRITE = 1;
    public static final int WC_OP_RDMA_READ = 2;
    public static final int WC_OP_RECV = 128;
    public static final int WC_OP_RECV_RDMA_WITH_IMM = 129;

    // enum ibv_wc_flags
    public static final int WC_WITH_IMM = 2;

    // enum ibv_wc_status
    public static final int WC_SUCCESS = 0;
    public static final int WC_LOC_LEN_ERR = 1;
    public static final int WC_LOC_QP_OP_ERR = 2;
    public static final int WC_LOC_PROT_ERR = 4;
    public static final int WC_WR_FLUSH_ERR = 5;
    public static final int WC_LOC_ACCESS_ERR = 8;
    public static final int WC_REM_INV_REQ_ERR = 9;
    public static final int WC_REM_ACCESS_ERR = 10;
    public static final int WC_REM_OP_ERR = 11;
    public static final int WC_RETRY_EXC_ERR = 12;
    public static final int WC_RNR_RETRY_EXC_ERR = 13;

    // enum ibv_access_flags
    public static final int ACCESS_LOCAL_WRITE = 1;
    public static final int ACCESS_REMOTE_WRITE = 2;
    public static final int ACCESS_REMOTE_READ = 4;
    public static final int ACCESS_REMOTE_ATOMIC = 8;

    // enum ibv_qp_type
    public static final int QPT_RC = 2;

    // errno (Linux x86-64)
    public static final int ENOMEM = 12;
    public static final int EBUSY = 16;
    public static final int EINVAL = 22;

    /** libdisni's MAX_SGE: every QP is created with 4 send and 4 receive SGEs. */
    public static final int MAX_SGE = 4;
    /** libdisni 2.1's JVERBS_JNI_VERSION. */
    public static final int JNI_VERSION = 32;

    private VerbsLayout()
    {
    }
}
