import { createHash, randomBytes } from 'node:crypto';
import type { Socket } from 'node:net';
import { decodePlist, encodePlist, PLIST_LIMITS, type PlistDict } from '../../protocols/apple/plist-wire.js';

export const IMAGE_MOUNTER_SERVICE = 'com.apple.mobile.mobile_image_mounter';

/**
 * The largest image a host may announce: Xcode's Developer Disk Images are well under it, so more is a host not talking
 * the protocol, refused before any byte of it is taken.
 */
export const MAX_IMAGE_BYTES = 64 * 1024 * 1024;

/** One MountImage the phone accepted, as the host sent it. */
export interface ImageMount {
  imageType: string;
  /** For a personalized image, the ApImg4Ticket Apple's TSS signed for this phone's nonce. */
  signature: Buffer;
  trustCache: Buffer | undefined;
  /** SHA-384 of the uploaded image, the digest QueryPersonalizationManifest names it by. */
  imageDigest: Buffer;
  imageBytes: number;
}

/**
 * The phone's side of mobile_image_mounter: what is mounted, the personalization nonce, and every mount accepted.
 * Whether the Developer Disk Image is mounted stays the phone's `developerImage` (lockdown's developer services before
 * iOS 17, RSD's after): a mount sets it, a restart clears it.
 */
export interface ImageMounterHost {
  readonly majorVersion: number;
  developerImage: boolean;
  readonly imageMounter: ImageMounterState;
}

export class ImageMounterState {
  /** Accepted MountImage requests, oldest first: what a test reads to see what the host sent. */
  readonly mounts: ImageMount[] = [];
  /** Signatures of the images mounted now (LookupImage's answer), cleared when the phone restarts. */
  mounted: Buffer[] = [];
  /** Tickets by image digest: a phone keeps the manifest it mounted with, which QueryPersonalizationManifest returns. */
  readonly manifests = new Map<string, Buffer>();
  /** The signature of an image mounted before anyone here asked (by Xcode), on a phone made with it mounted. */
  readonly earlier = randomBytes(64);
  /** The ApNonce TSS signs into the ticket; a new one after each mount and each boot, as the phone rolls it. */
  nonce: Buffer = randomBytes(20);

  /** What a restart does: the image is gone, and the nonce the phone offers is a new one. */
  reboot(): void {
    this.mounted = [];
    this.nonce = randomBytes(20);
  }
}

/**
 * The phone's personalization identifiers, as an iPhone SE (3rd generation) reports them: ChipID 0x8110 (the first
 * part of its UDID), BoardId 0x10, SecurityDomain 1 (production). A host finds the BuildIdentity of Xcode's
 * BuildManifest.plist with the same ApChipID and ApBoardID and asks TSS to sign that one.
 */
export const PERSONALIZATION_IDENTIFIERS = { BoardId: 0x10, ChipID: 0x8110, SecurityDomain: 1 } as const;

/**
 * com.apple.mobile.mobile_image_mounter, started through lockdown, as go-ios's imagemounter package (and
 * pymobiledevice3's MobileImageMounterService) speak it: length-prefixed plists `{Command: ...}`, except for the image
 * itself, which follows ReceiveBytes' ReceiveBytesAck as ImageSize raw bytes and is answered `{Status: 'Complete'}`.
 * iOS 17+ takes personalized images (ImageType Personalized, signed by Apple's TSS for this phone's nonce), earlier
 * versions the Developer image with its .signature. What the phone does not know it answers with an Error key.
 */
export function serveImageMounter(socket: Socket, host: ImageMounterHost): void {
  const state = host.imageMounter;
  const personalized = host.majorVersion >= 17;
  const imageType = personalized ? 'Personalized' : 'Developer';
  let pending: Buffer = Buffer.alloc(0);
  // After ReceiveBytes: the image's bytes still to come, and the upload they go to.
  let upload: { left: number; hash: ReturnType<typeof createHash>; size: number; signature: Buffer } | undefined;
  let uploaded: { digest: Buffer; size: number; signature: Buffer } | undefined;
  socket.on('error', () => undefined);

  const send = (message: PlistDict) => {
    const body = encodePlist(message);
    const header = Buffer.alloc(4);
    header.writeUInt32BE(body.length, 0);
    if (!socket.destroyed) socket.write(Buffer.concat([header, body]));
  };
  const fail = (error: string, detail?: string) => send({ Error: error, ...(detail ? { DetailedError: detail } : {}) });
  const data = (value: unknown) => (value instanceof Uint8Array ? Buffer.from(value) : undefined);

  const handle = (request: PlistDict) => {
    const command = String(request.Command ?? '');
    switch (command) {
      case 'LookupImage':
        if (request.ImageType !== imageType) return fail('InternalError', `ImageType ${String(request.ImageType)} is not supported on iOS ${host.majorVersion}`);
        if (!host.developerImage) return send({ ImageSignature: [], Status: 'Complete' });
        return send({ ImageSignature: state.mounted.length ? state.mounted : [state.earlier], Status: 'Complete' });
      case 'QueryDeveloperModeStatus':
        return send({ DeveloperModeStatus: true });
      case 'QueryPersonalizationIdentifiers':
        if (!personalized) return fail('UnknownCommand');
        return send({ PersonalizationIdentifiers: { ...PERSONALIZATION_IDENTIFIERS }, Status: 'Complete' });
      case 'QueryNonce':
        if (!personalized) return fail('UnknownCommand');
        return send({ PersonalizationNonce: state.nonce, Status: 'Complete' });
      case 'QueryPersonalizationManifest': {
        if (!personalized) return fail('UnknownCommand');
        const digest = data(request.ImageSignature);
        const ticket = digest && state.manifests.get(digest.toString('hex'));
        // A phone that never mounted this image holds no manifest for it: the host has to ask TSS.
        if (!ticket) return fail('InternalError', 'Failed to find personalization manifest (kMobileImageMounterPersonalizationManifestNotFound)');
        return send({ ImageSignature: ticket, Status: 'Complete' });
      }
      case 'ReceiveBytes': {
        const size = request.ImageSize;
        const signature = data(request.ImageSignature);
        if (request.ImageType !== imageType) return fail('InternalError', `ImageType ${String(request.ImageType)} is not supported on iOS ${host.majorVersion}`);
        if (!signature || signature.length === 0) return fail('InternalError', 'ImageSignature is missing');
        if (typeof size !== 'number' || !Number.isInteger(size) || size <= 0) return fail('InternalError', 'ImageSize is missing');
        // Refused before a byte is read: the host would have the phone hold whatever it announces.
        if (size > MAX_IMAGE_BYTES) return fail('InternalError', `ImageSize ${size} is over ${MAX_IMAGE_BYTES}`);
        upload = { left: size, size, hash: createHash('sha384'), signature };
        return send({ Status: 'ReceiveBytesAck' });
      }
      case 'MountImage': {
        const signature = data(request.ImageSignature);
        if (request.ImageType !== imageType) return fail('InternalError', `ImageType ${String(request.ImageType)} is not supported on iOS ${host.majorVersion}`);
        if (!uploaded) return fail('ImageMountFailed', 'No image was received on this connection');
        // The signature the image came with is the one it mounts with: anything else fails the phone's check.
        if (!signature || !signature.equals(uploaded.signature)) return fail('ImageMountFailed', 'ImageSignature does not match the received image');
        const trustCache = data(request.ImageTrustCache);
        if (personalized && !trustCache) return fail('ImageMountFailed', 'ImageTrustCache is missing');
        state.mounts.push({ imageType, signature, trustCache, imageDigest: uploaded.digest, imageBytes: uploaded.size });
        state.mounted = [...state.mounted, signature];
        if (personalized) {
          state.manifests.set(uploaded.digest.toString('hex'), signature);
          state.nonce = randomBytes(20);
        }
        uploaded = undefined;
        host.developerImage = true;
        return send({ Status: 'Complete' });
      }
      case 'Hangup':
        send({ Status: 'Complete' });
        socket.end();
        return;
      default:
        return fail('UnknownCommand');
    }
  };

  socket.on('data', (chunk: Buffer) => {
    pending = pending.length ? Buffer.concat([pending, chunk]) : chunk;
    while (pending.length > 0) {
      if (upload) {
        const take = Math.min(upload.left, pending.length);
        upload.hash.update(pending.subarray(0, take));
        upload.left -= take;
        pending = pending.subarray(take);
        if (upload.left > 0) return;
        uploaded = { digest: upload.hash.digest(), size: upload.size, signature: upload.signature };
        upload = undefined;
        send({ Status: 'Complete' });
        continue;
      }
      if (pending.length < 4) return;
      const length = pending.readUInt32BE(0);
      if (length > PLIST_LIMITS.maxBytes) return void socket.destroy();
      if (pending.length < 4 + length) return;
      let request: PlistDict;
      try {
        request = decodePlist(pending.subarray(4, 4 + length));
      } catch {
        return void socket.destroy();
      }
      pending = pending.subarray(4 + length);
      handle(request);
    }
  });
}
