import { randomUUID } from 'node:crypto';
import type { Socket } from 'node:net';
import { readZipEntry } from '../android/apk.js';
import { newDataContainer, type MediaFs } from './afc.js';
import { decodePlist, PlistChannel, type PlistDict } from '../../protocols/apple/plist-wire.js';

export const INSTALLATION_PROXY_SERVICE = 'com.apple.mobile.installation_proxy';

export interface InstalledApp {
  bundleId: string;
  name: string;
  version: string;
  build: string;
  type: 'System' | 'User';
  /** CFBundleExecutable; an XCTest runner's ends in "-Runner". Defaults to the name. */
  executable?: string;
  /** The signing certificate of a developer-signed app (SignerIdentity), whose container house_arrest may vend. */
  signer?: string;
  /** Where the app's data container is on the phone (Container). */
  container?: string;
  /** Where the app's bundle is on the phone (Path). */
  path?: string;
  /** UIFileSharingEnabled in its Info.plist: its Documents are shared (the Files app, Finder, house_arrest's VendDocuments). */
  fileSharing?: boolean;
}

/** What installation_proxy changes on its phone. */
export interface AppRegistry {
  apps: Map<string, InstalledApp>;
  media: MediaFs;
  /** The apps' data containers, by bundle id: made on install, kept on upgrade, removed on uninstall. */
  containers: Map<string, { path: string; fs: MediaFs }>;
  /** Called after an install or uninstall, so the home screen redraws. */
  appsChanged(): void;
}

const INFO_PLIST = /^Payload\/[^/]+\.app\/Info\.plist$/;
const INSTALL_STEPS: Array<[number, string]> = [
  [5, 'CreatingStagingDirectory'], [15, 'ExtractingPackage'], [20, 'InspectingPackage'], [30, 'TakingInstallLock'],
  [40, 'PreflightingApplication'], [50, 'VerifyingApplication'], [60, 'CreatingContainer'], [70, 'InstallingApplication'],
  [80, 'PostflightingApplication'], [90, 'SandboxingApplication'], [100, 'GeneratingApplicationMap'],
];

/** An app's attributes, only those the client named in ReturnAttributes when it named any, as installd answers. */
function appAttributes(app: InstalledApp, only?: unknown): PlistDict {
  const all: PlistDict = {
    ApplicationType: app.type,
    CFBundleIdentifier: app.bundleId,
    CFBundleDisplayName: app.name,
    CFBundleName: app.name,
    CFBundleShortVersionString: app.version,
    CFBundleVersion: app.build,
    CFBundleExecutable: app.executable ?? app.name,
    // System apps live in the read-only system volume's /Applications.
    Path: app.path ?? (app.type === 'System' ? `/Applications/${app.executable ?? app.name}.app` : `/private/var/containers/Bundle/Application/${app.bundleId}/${app.name}.app`),
    SignerIdentity: app.signer,
    Container: app.container,
    // An Info.plist key: absent unless the app sets it, as installd returns the plist's own keys.
    ...(app.fileSharing !== undefined ? { UIFileSharingEnabled: app.fileSharing } : {}),
  };
  if (!Array.isArray(only) || only.length === 0) return all;
  return Object.fromEntries(only.map(String).filter((key) => key in all).map((key) => [key, all[key]]));
}

/** Reads an IPA's Info.plist, as the phone's installd inspects a package: no CFBundleIdentifier, no install. */
export function inspectIpa(ipa: Buffer): InstalledApp {
  const info = readZipEntry(ipa, (name) => INFO_PLIST.test(name));
  if (!info) throw new Error('The package has no Payload/<name>.app/Info.plist.');
  const plist = decodePlist(info);
  const bundleId = plist.CFBundleIdentifier;
  if (typeof bundleId !== 'string' || !bundleId) throw new Error('Info.plist has no CFBundleIdentifier.');
  const text = (v: unknown) => (typeof v === 'string' ? v : '');
  return {
    bundleId,
    name: text(plist.CFBundleDisplayName) || text(plist.CFBundleName) || bundleId.split('.').pop()!,
    version: text(plist.CFBundleShortVersionString) || '1.0',
    build: text(plist.CFBundleVersion) || '1',
    type: 'User',
    ...(typeof plist.UIFileSharingEnabled === 'boolean' ? { fileSharing: plist.UIFileSharingEnabled } : {}),
  };
}

/**
 * com.apple.mobile.installation_proxy: Browse (the list in chunks, then Complete), Lookup, Install/Upgrade of a
 * package already uploaded through AFC (PackagePath is relative to the media root, PublicStaging/...), and
 * Uninstall; long operations report PercentComplete and Status as they go, and end with Status "Complete".
 */
export function serveInstallationProxy(socket: Socket, registry: AppRegistry): void {
  socket.on('error', () => undefined);
  const channel = new PlistChannel(socket, (request) => {
    const options = (request.ClientOptions ?? {}) as PlistDict;
    switch (request.Command) {
      case 'Browse': {
        const type = typeof options.ApplicationType === 'string' ? options.ApplicationType : 'Any';
        const list = [...registry.apps.values()].filter((a) => type === 'Any' || a.type === type).map((a) => appAttributes(a, options.ReturnAttributes));
        // Real phones send the list in chunks of about 20.
        for (let i = 0; i < list.length || i === 0; i += 20) {
          const chunk = list.slice(i, i + 20);
          channel.send({ CurrentAmount: chunk.length, CurrentIndex: i, CurrentList: chunk, Status: 'BrowsingApplications', Total: list.length });
          if (list.length === 0) break;
        }
        return channel.send({ Status: 'Complete' });
      }
      case 'Lookup': {
        const wanted = Array.isArray(options.BundleIDs) ? options.BundleIDs.map(String) : [...registry.apps.keys()];
        const result = Object.fromEntries(wanted.filter((id) => registry.apps.has(id)).map((id) => [id, appAttributes(registry.apps.get(id)!, options.ReturnAttributes)]));
        return channel.send({ LookupResult: result, Status: 'Complete' });
      }
      case 'Install':
      case 'Upgrade': {
        const path = String(request.PackagePath ?? '');
        const ipa = registry.media.read(path);
        if (!ipa) return channel.send({ Error: 'PackageExtractionFailed', ErrorDescription: `Could not open ${path}`, Status: 'Failed' });
        let app: InstalledApp;
        try {
          app = inspectIpa(ipa);
        } catch (error) {
          return channel.send({ Error: 'PackageInspectionFailed', ErrorDescription: (error as Error).message, Status: 'Failed' });
        }
        for (const [percent, status] of INSTALL_STEPS) channel.send({ PercentComplete: percent, Status: status });
        // installd puts each install's bundle and its data container in directories named by new UUIDs; an upgrade
        // keeps the data container.
        const executable = app.executable ?? app.name;
        app.path = `/private/var/containers/Bundle/Application/${randomUUID().toUpperCase()}/${executable}.app`;
        const kept = registry.containers.get(app.bundleId);
        const container = kept ?? { path: `/private/var/mobile/Containers/Data/Application/${randomUUID().toUpperCase()}`, fs: newDataContainer() };
        app.container = container.path;
        registry.containers.set(app.bundleId, container);
        registry.apps.set(app.bundleId, app);
        registry.appsChanged();
        return channel.send({ Status: 'Complete' });
      }
      case 'Uninstall': {
        const id = String(request.ApplicationIdentifier ?? '');
        const app = registry.apps.get(id);
        if (app?.type === 'System') return channel.send({ Error: 'UninstallProhibited', ErrorDescription: `${id} is a system app.`, Status: 'Failed' });
        channel.send({ PercentComplete: 50, Status: 'RemovingApplication' });
        if (app) {
          registry.apps.delete(id);
          // The data container goes with the app, its Documents too.
          registry.containers.delete(id);
          registry.appsChanged();
        }
        channel.send({ PercentComplete: 90, Status: 'GeneratingApplicationMap' });
        return channel.send({ Status: 'Complete' });
      }
      default:
        return channel.send({ Error: 'UnknownCommand', Status: 'Failed' });
    }
  });
}
