/**
 * Compact Argentine reference tables for synthetic customers, written from general knowledge
 * (not copied from any dataset): given names with sex, surnames, the 24 jurisdictions with their
 * CPA letter, a few real cities each with a plausible 4-digit postal code and phone area code,
 * and the messy spellings real shops receive. Good enough to look real, not a gazetteer.
 */

export type Sex = 'F' | 'M'

/** Which generation a name is typical of; used to tilt choices by birth year. */
export type NameEra = 'old' | 'mid' | 'young' | 'any'

export interface GivenName {
  name: string
  sex: Sex
  era: NameEra
}

const f = (name: string, era: NameEra = 'any'): GivenName => ({ name, sex: 'F', era })
const m = (name: string, era: NameEra = 'any'): GivenName => ({ name, sex: 'M', era })

/** Roughly most common first within each sex; the generator weights by rank (Zipf-like). */
export const GIVEN_NAMES: readonly GivenName[] = [
  f('María'), f('María José'), f('María Laura'), f('María Belén', 'mid'), f('María Florencia', 'mid'),
  f('María Eugenia', 'mid'), f('Ana'), f('Ana Laura', 'mid'), f('Lucía', 'young'), f('Sofía', 'young'),
  f('Valentina', 'young'), f('Camila', 'young'), f('Martina', 'young'), f('Florencia', 'mid'), f('Agustina', 'young'),
  f('Micaela', 'young'), f('Julieta', 'mid'), f('Carolina', 'mid'), f('Gabriela', 'mid'), f('Silvia', 'old'),
  f('Patricia', 'old'), f('Graciela', 'old'), f('Mónica', 'old'), f('Laura'), f('Paula', 'mid'),
  f('Romina', 'mid'), f('Natalia', 'mid'), f('Verónica', 'mid'), f('Marcela', 'old'), f('Claudia', 'old'),
  f('Andrea', 'mid'), f('Daniela', 'mid'), f('Victoria', 'young'), f('Milagros', 'young'), f('Rocío', 'young'),
  f('Luciana', 'mid'), f('Catalina', 'young'), f('Ailén', 'young'), f('Guadalupe', 'young'), f('Norma', 'old'),
  m('Juan'), m('Juan Pablo', 'mid'), m('Juan Manuel', 'mid'), m('Juan Carlos', 'old'), m('José'),
  m('José María', 'old'), m('José Luis', 'old'), m('Carlos', 'old'), m('Jorge', 'old'), m('Luis', 'old'),
  m('Miguel Ángel', 'old'), m('Diego', 'mid'), m('Martín', 'mid'), m('Sebastián', 'mid'), m('Pablo', 'mid'),
  m('Alejandro', 'mid'), m('Fernando', 'mid'), m('Gustavo', 'old'), m('Marcelo', 'old'), m('Hernán', 'mid'),
  m('Facundo', 'young'), m('Nicolás', 'young'), m('Matías', 'young'), m('Lucas', 'young'), m('Santiago', 'young'),
  m('Tomás', 'young'), m('Joaquín', 'young'), m('Mateo', 'young'), m('Thiago', 'young'), m('Benjamín', 'young'),
  m('Bautista', 'young'), m('Agustín', 'young'), m('Gonzalo', 'mid'), m('Federico', 'mid'), m('Maximiliano', 'mid'),
  m('Ezequiel', 'mid'), m('Lautaro', 'young'), m('Nahuel', 'young'), m('Rodrigo', 'mid'), m('Héctor', 'old'),
  m('Raúl', 'old'), m('Ricardo', 'old'), m('Damián', 'mid'), m('Ignacio', 'young'), m('Julián', 'young'),
]

/** Common Argentine surnames, roughly by frequency; Italian and other immigrant names included. */
export const SURNAMES: readonly string[] = [
  'González', 'Rodríguez', 'Gómez', 'Fernández', 'López', 'Díaz', 'Martínez', 'Pérez', 'García', 'Sánchez',
  'Romero', 'Sosa', 'Torres', 'Álvarez', 'Ruiz', 'Ramírez', 'Flores', 'Benítez', 'Acosta', 'Medina',
  'Herrera', 'Suárez', 'Aguirre', 'Giménez', 'Gutiérrez', 'Pereyra', 'Rojas', 'Molina', 'Castro', 'Ortiz',
  'Silva', 'Núñez', 'Luna', 'Juárez', 'Cabrera', 'Ríos', 'Ferreyra', 'Godoy', 'Morales', 'Domínguez',
  'Moreno', 'Peralta', 'Vega', 'Carrizo', 'Quiroga', 'Castillo', 'Ledesma', 'Muñoz', 'Ojeda', 'Ponce',
  'Vera', 'Vázquez', 'Villalba', 'Cardozo', 'Navarro', 'Ramos', 'Arias', 'Coronel', 'Córdoba', 'Figueroa',
  'Correa', 'Cáceres', 'Vargas', 'Paz', 'Rivero', 'Mansilla', 'Farías', 'Roldán', 'Méndez', 'Guzmán',
  'Lucero', 'Bustos', 'Rossi', 'Russo', 'Ferrari', 'Bianchi', 'Romano', 'Fontana', 'Gallo', 'Schmidt',
]

export interface City {
  name: string
  /** Old 4-digit postal code (the digits of the CPA). */
  postalCode: string
  /** Phone area code without the trunk 0; area code + local number = 10 digits. */
  areaCode: string
  /** A common short or informal name, used in messy records. */
  alias?: string
}

export interface Jurisdiction {
  /** ISO 3166-2:AR letter, also the first character of the CPA. */
  letter: string
  name: string
  /** Relative share of online customers: population (thousands, 2022 census, rounded), CABA boosted. */
  weight: number
  cities: readonly City[]
  /** Spellings seen in real address forms, used to dirty records. */
  aliases: readonly string[]
}

const c = (name: string, postalCode: string, areaCode: string, alias?: string): City =>
  alias === undefined ? { name, postalCode, areaCode } : { name, postalCode, areaCode, alias }

export const JURISDICTIONS: readonly Jurisdiction[] = [
  {
    letter: 'C', name: 'Ciudad Autónoma de Buenos Aires', weight: 3100 * 2, // online shopping over-indexes in CABA
    cities: [c('Palermo', '1425', '11'), c('Belgrano', '1428', '11'), c('Caballito', '1405', '11'), c('Flores', '1406', '11'), c('Villa Urquiza', '1431', '11')],
    aliases: ['CABA', 'Capital Federal', 'C.A.B.A.', 'Cap. Fed.', 'Ciudad de Buenos Aires', 'capital', 'Buenos Aires'],
  },
  {
    letter: 'B', name: 'Buenos Aires', weight: 17500,
    cities: [c('La Plata', '1900', '221'), c('Mar del Plata', '7600', '223', 'MDQ'), c('Quilmes', '1878', '11'), c('Lomas de Zamora', '1832', '11'), c('Bahía Blanca', '8000', '291')],
    aliases: ['Bs As', 'Bs. As.', 'BsAs', 'Pcia. de Buenos Aires', 'Provincia de Buenos Aires', 'PBA', 'Prov. Bs. As.'],
  },
  {
    letter: 'K', name: 'Catamarca', weight: 430,
    cities: [c('San Fernando del Valle de Catamarca', '4700', '383', 'Catamarca'), c('Andalgalá', '4740', '3835'), c('Belén', '4750', '3835')],
    aliases: ['Cat.', 'Catam.'],
  },
  {
    letter: 'H', name: 'Chaco', weight: 1130,
    cities: [c('Resistencia', '3500', '362'), c('Presidencia Roque Sáenz Peña', '3700', '364', 'Sáenz Peña'), c('Villa Ángela', '3540', '3735')],
    aliases: ['Cho.', 'Pcia. del Chaco'],
  },
  {
    letter: 'U', name: 'Chubut', weight: 600,
    cities: [c('Comodoro Rivadavia', '9000', '297', 'Comodoro'), c('Trelew', '9100', '280'), c('Puerto Madryn', '9120', '280'), c('Esquel', '9200', '2945')],
    aliases: ['Chub.', 'Pcia. del Chubut'],
  },
  {
    letter: 'X', name: 'Córdoba', weight: 3840,
    cities: [c('Córdoba', '5000', '351'), c('Río Cuarto', '5800', '358'), c('Villa María', '5900', '353'), c('Villa Carlos Paz', '5152', '3541', 'Carlos Paz'), c('San Francisco', '2400', '3564')],
    aliases: ['Cba', 'Cba.', 'Cdba', 'Cordoba'],
  },
  {
    letter: 'W', name: 'Corrientes', weight: 1210,
    cities: [c('Corrientes', '3400', '379'), c('Goya', '3450', '3777'), c('Paso de los Libres', '3230', '3772')],
    aliases: ['Ctes', 'Ctes.'],
  },
  {
    letter: 'E', name: 'Entre Ríos', weight: 1430,
    cities: [c('Paraná', '3100', '343'), c('Concordia', '3200', '345'), c('Gualeguaychú', '2820', '3446'), c('Concepción del Uruguay', '3260', '3442', 'C. del Uruguay')],
    aliases: ['E. Ríos', 'Entre Rios', 'ER'],
  },
  {
    letter: 'P', name: 'Formosa', weight: 610,
    cities: [c('Formosa', '3600', '370'), c('Clorinda', '3610', '3718')],
    aliases: ['Fsa', 'Fsa.'],
  },
  {
    letter: 'Y', name: 'Jujuy', weight: 810,
    cities: [c('San Salvador de Jujuy', '4600', '388', 'Jujuy'), c('Palpalá', '4612', '388'), c('San Pedro de Jujuy', '4500', '3888', 'San Pedro')],
    aliases: ['Jjy', 'Pcia. de Jujuy'],
  },
  {
    letter: 'L', name: 'La Pampa', weight: 360,
    cities: [c('Santa Rosa', '6300', '2954'), c('General Pico', '6360', '2302', 'Gral. Pico')],
    aliases: ['L. Pampa', 'LP'],
  },
  {
    letter: 'F', name: 'La Rioja', weight: 380,
    cities: [c('La Rioja', '5300', '380'), c('Chilecito', '5360', '3825')],
    aliases: ['Rioja', 'L. Rioja'],
  },
  {
    letter: 'M', name: 'Mendoza', weight: 2040,
    cities: [c('Mendoza', '5500', '261'), c('Godoy Cruz', '5501', '261'), c('Guaymallén', '5519', '261'), c('San Rafael', '5600', '260'), c('Luján de Cuyo', '5507', '261')],
    aliases: ['Mza', 'Mza.', 'Mdz'],
  },
  {
    letter: 'N', name: 'Misiones', weight: 1280,
    cities: [c('Posadas', '3300', '376'), c('Oberá', '3360', '3755'), c('Eldorado', '3380', '3751'), c('Puerto Iguazú', '3370', '3757', 'Iguazú')],
    aliases: ['Mnes', 'Mnes.'],
  },
  {
    letter: 'Q', name: 'Neuquén', weight: 710,
    cities: [c('Neuquén', '8300', '299'), c('Plottier', '8316', '299'), c('Cutral Có', '8322', '299'), c('San Martín de los Andes', '8370', '2972')],
    aliases: ['Nqn', 'Neuquen'],
  },
  {
    letter: 'R', name: 'Río Negro', weight: 750,
    cities: [c('Viedma', '8500', '2920'), c('San Carlos de Bariloche', '8400', '294', 'Bariloche'), c('General Roca', '8332', '298', 'Gral. Roca'), c('Cipolletti', '8324', '299')],
    aliases: ['R. Negro', 'Rio Negro', 'RN'],
  },
  {
    letter: 'A', name: 'Salta', weight: 1440,
    cities: [c('Salta', '4400', '387'), c('San Ramón de la Nueva Orán', '4530', '3878', 'Orán'), c('Tartagal', '4560', '3873')],
    aliases: ['Sla', 'Pcia. de Salta'],
  },
  {
    letter: 'J', name: 'San Juan', weight: 820,
    cities: [c('San Juan', '5400', '264'), c('Caucete', '5442', '264'), c('Rivadavia', '5400', '264')],
    aliases: ['S. Juan', 'Sn Juan'],
  },
  {
    letter: 'D', name: 'San Luis', weight: 540,
    cities: [c('San Luis', '5700', '266'), c('Villa Mercedes', '5730', '2657'), c('Merlo', '5881', '2656')],
    aliases: ['S. Luis', 'Sn Luis'],
  },
  {
    letter: 'Z', name: 'Santa Cruz', weight: 340,
    cities: [c('Río Gallegos', '9400', '2966'), c('Caleta Olivia', '9011', '297'), c('El Calafate', '9405', '2902')],
    aliases: ['Sta Cruz', 'Sta. Cruz'],
  },
  {
    letter: 'S', name: 'Santa Fe', weight: 3560,
    cities: [c('Rosario', '2000', '341'), c('Santa Fe', '3000', '342'), c('Rafaela', '2300', '3492'), c('Venado Tuerto', '2600', '3462'), c('Reconquista', '3560', '3482')],
    aliases: ['Sta Fe', 'Sta. Fe', 'Santa Fé', 'SFe'],
  },
  {
    letter: 'G', name: 'Santiago del Estero', weight: 1060,
    cities: [c('Santiago del Estero', '4200', '385', 'Santiago'), c('La Banda', '4300', '385'), c('Termas de Río Hondo', '4220', '3858', 'Las Termas')],
    aliases: ['Sgo. del Estero', 'Stgo del Estero', 'SDE'],
  },
  {
    letter: 'V', name: 'Tierra del Fuego', weight: 190,
    cities: [c('Ushuaia', '9410', '2901'), c('Río Grande', '9420', '2964')],
    aliases: ['TDF', 'T. del Fuego', 'Tierra del Fuego, Antártida e Islas del Atlántico Sur'],
  },
  {
    letter: 'T', name: 'Tucumán', weight: 1730,
    cities: [c('San Miguel de Tucumán', '4000', '381', 'Tucumán'), c('Yerba Buena', '4107', '381'), c('Tafí Viejo', '4103', '381'), c('Concepción', '4146', '3865')],
    aliases: ['Tuc', 'Tuc.', 'Tucuman'],
  },
]

/** Street names found in almost every Argentine town; "Av." marks the avenues. */
export const STREETS: readonly string[] = [
  'San Martín', 'Belgrano', 'Rivadavia', 'Sarmiento', 'Mitre', 'Moreno', '9 de Julio', '25 de Mayo',
  'Av. Corrientes', 'Av. Santa Fe', 'Italia', 'España', 'Urquiza', 'Av. Alem', 'Las Heras', 'Pellegrini',
  'Av. Libertador', 'Colón', 'Independencia', 'Av. San Juan', 'Güemes', 'Lavalle', 'Tucumán', 'Maipú',
]

export const EMAIL_DOMAINS: readonly string[] = ['gmail.com', 'hotmail.com', 'outlook.com', 'yahoo.com.ar']
/** gmail dominates among Argentine consumers; hotmail lingers among older accounts. */
export const EMAIL_DOMAIN_WEIGHTS: readonly number[] = [0.6, 0.2, 0.1, 0.1]
