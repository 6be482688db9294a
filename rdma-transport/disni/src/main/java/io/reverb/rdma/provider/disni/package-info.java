/**
 * The {@code disni} verbs provider: real RDMA (InfiniBand, RoCE, Soft-RoCE; iWARP is detected and refused) through DiSNi 2.1,
 * serving {@code rdma://host:port}. DiSNi's native half is this artifact's own ({@code src/main/c}, bundled in the
 * jar). Not run on RDMA hardware in this project's development or CI; see
 * {@code rdma-transport/RDMA-HARDWARE.md}.
 *
 * <h2>Mapping</h2>
 * <pre>
 *   SPI                              DiSNi 2.1
 *   VerbsProvider.isAvailable        DisniAvailability: sysfs, /dev/infiniband/rdma_cm, a native half
 *                                    (bundled, or libdisni on java.library.path), sun.nio.ch export; then
 *                                    RdmaProvider.provider() (Reverb's NativeDispatcher loads the native
 *                                    half, nativelib.NativeLibrary; JNI version) and an rdma_cm event channel
 *   VerbsContext                     RdmaEventChannel + dispatcher thread (CmEventDispatcher, which also
 *                                    creates/destroys ids: CmIdTable), IbvContext of an anchor RdmaCmId
 *                                    bound to an address of the device (RdmaDevices, sysfs)
 *   ProtectionDomain / MemoryRegion  IbvPd, regMr on a fresh direct buffer, deregMr
 *   CompletionQueue                  IbvCQ + its own IbvCompChannel; SVCPollCq, SVCReqNotify
 *   CompletionChannel                Java gate fed by one event pump per CQ, started on the first
 *                                    requestNotify (getCqEvent, ackEvents); none for busy pollers
 *   QueuePair.postSend / postRecv    IbvQP.postSend / postRecv via PostSendCache / PostRecvCache
 *   WorkCompletions                  IbvWC via WorkRequestTranslator (status, opcode, imm byte order)
 *   listen / connect / accept /      TCP Handshake (private data, accept/reject, rdma_cm port) +
 *   reject / private data            RdmaCmId bindAddr/listen, resolveAddr/resolveRoute, createQP,
 *                                    connect/accept, events via the dispatcher
 *   disconnect / flush               RdmaCmId.disconnect, RDMA_CM_EVENT_DISCONNECTED, QP to ERROR
 * </pre>
 */
package io.reverb.rdma.provider.disni;
