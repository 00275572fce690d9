/**
 * Phones' marketing names by the model they report, for the pages and for WebDriver's appium:deviceName (a suite from a
 * cloud lab names "iPhone 15" or "Samsung Galaxy S23"): an iPhone reports its ProductType ("iPhone14,6"), a Samsung its
 * model number ("SM-S911B", the last letters the region). The identifier is what the engine stores and filters on,
 * but nobody recognises their phone by it. Models not listed show the identifier; a Pixel reports its name itself.
 */
const NAMES: Record<string, string> = {
  'iPhone10,1': 'iPhone 8', 'iPhone10,4': 'iPhone 8', 'iPhone10,2': 'iPhone 8 Plus', 'iPhone10,5': 'iPhone 8 Plus',
  'iPhone10,3': 'iPhone X', 'iPhone10,6': 'iPhone X',
  'iPhone11,2': 'iPhone XS', 'iPhone11,4': 'iPhone XS Max', 'iPhone11,6': 'iPhone XS Max', 'iPhone11,8': 'iPhone XR',
  'iPhone12,1': 'iPhone 11', 'iPhone12,3': 'iPhone 11 Pro', 'iPhone12,5': 'iPhone 11 Pro Max', 'iPhone12,8': 'iPhone SE (2nd generation)',
  'iPhone13,1': 'iPhone 12 mini', 'iPhone13,2': 'iPhone 12', 'iPhone13,3': 'iPhone 12 Pro', 'iPhone13,4': 'iPhone 12 Pro Max',
  'iPhone14,4': 'iPhone 13 mini', 'iPhone14,5': 'iPhone 13', 'iPhone14,2': 'iPhone 13 Pro', 'iPhone14,3': 'iPhone 13 Pro Max',
  'iPhone14,6': 'iPhone SE (3rd generation)', 'iPhone14,7': 'iPhone 14', 'iPhone14,8': 'iPhone 14 Plus',
  'iPhone15,2': 'iPhone 14 Pro', 'iPhone15,3': 'iPhone 14 Pro Max',
  'iPhone15,4': 'iPhone 15', 'iPhone15,5': 'iPhone 15 Plus', 'iPhone16,1': 'iPhone 15 Pro', 'iPhone16,2': 'iPhone 15 Pro Max',
  'iPhone17,3': 'iPhone 16', 'iPhone17,4': 'iPhone 16 Plus', 'iPhone17,1': 'iPhone 16 Pro', 'iPhone17,2': 'iPhone 16 Pro Max',
  'iPhone17,5': 'iPhone 16e',
};

/**
 * Samsung's model numbers, by their first four characters after "SM-" (the rest is the region and carrier: SM-S911B in
 * Europe, SM-S911U in the US): the Galaxy S, Note and Z lines and the A3x and A5x phones since 2020, the ones device
 * labs and cloud catalogs carry.
 */
const SAMSUNG: Record<string, string> = {
  'SM-G980': 'Galaxy S20', 'SM-G981': 'Galaxy S20', 'SM-G985': 'Galaxy S20+', 'SM-G986': 'Galaxy S20+', 'SM-G988': 'Galaxy S20 Ultra',
  'SM-G780': 'Galaxy S20 FE', 'SM-G781': 'Galaxy S20 FE',
  'SM-G991': 'Galaxy S21', 'SM-G996': 'Galaxy S21+', 'SM-G998': 'Galaxy S21 Ultra', 'SM-G990': 'Galaxy S21 FE',
  'SM-S901': 'Galaxy S22', 'SM-S906': 'Galaxy S22+', 'SM-S908': 'Galaxy S22 Ultra',
  'SM-S911': 'Galaxy S23', 'SM-S916': 'Galaxy S23+', 'SM-S918': 'Galaxy S23 Ultra', 'SM-S711': 'Galaxy S23 FE',
  'SM-S921': 'Galaxy S24', 'SM-S926': 'Galaxy S24+', 'SM-S928': 'Galaxy S24 Ultra', 'SM-S721': 'Galaxy S24 FE',
  'SM-S931': 'Galaxy S25', 'SM-S936': 'Galaxy S25+', 'SM-S938': 'Galaxy S25 Ultra', 'SM-S937': 'Galaxy S25 Edge',
  'SM-N980': 'Galaxy Note20', 'SM-N981': 'Galaxy Note20', 'SM-N985': 'Galaxy Note20 Ultra', 'SM-N986': 'Galaxy Note20 Ultra',
  'SM-F926': 'Galaxy Z Fold3', 'SM-F936': 'Galaxy Z Fold4', 'SM-F946': 'Galaxy Z Fold5', 'SM-F956': 'Galaxy Z Fold6',
  'SM-F711': 'Galaxy Z Flip3', 'SM-F721': 'Galaxy Z Flip4', 'SM-F731': 'Galaxy Z Flip5', 'SM-F741': 'Galaxy Z Flip6',
  'SM-A315': 'Galaxy A31', 'SM-A325': 'Galaxy A32', 'SM-A326': 'Galaxy A32 5G', 'SM-A336': 'Galaxy A33 5G',
  'SM-A346': 'Galaxy A34 5G', 'SM-A356': 'Galaxy A35 5G', 'SM-A366': 'Galaxy A36 5G',
  'SM-A515': 'Galaxy A51', 'SM-A516': 'Galaxy A51 5G', 'SM-A525': 'Galaxy A52', 'SM-A526': 'Galaxy A52 5G', 'SM-A528': 'Galaxy A52s 5G',
  'SM-A536': 'Galaxy A53 5G', 'SM-A546': 'Galaxy A54 5G', 'SM-A556': 'Galaxy A55 5G', 'SM-A566': 'Galaxy A56 5G',
};

/** "iPhone SE (3rd generation)" for "iPhone14,6", "Galaxy S23" for "SM-S911B"; any other model as given. */
export function modelName(model: string): string {
  return NAMES[model] ?? (model.startsWith('SM-') ? SAMSUNG[model.slice(0, 7)] : undefined) ?? model;
}

/** The platform as people write it. */
export function platformName(platform: string): string {
  return platform === 'ios' ? 'iOS' : platform === 'android' ? 'Android' : platform;
}
