// Version conditions as TypeScript expressions over a `version` variable.
import { covers, isEmpty, type Versions } from '../src/message-spec';

/**
 * The condition under which `versions` holds, given that `version` is within `within`; 'true' or
 * 'false' when it does not depend on the version.
 */
export function versionCondition(versions: Versions, within: Versions): string {
  if (isEmpty(versions)) return 'false';
  if (covers(versions, within)) return 'true';
  const parts: string[] = [];
  if (versions.lowest > within.lowest) parts.push(`version >= ${versions.lowest}`);
  if (versions.highest < within.highest) parts.push(`version <= ${versions.highest}`);
  if (parts.length === 0) return 'true';
  if (versions.highest < within.lowest || versions.lowest > within.highest) return 'false';
  return parts.join(' && ');
}
