/**
 * Common given names in Argentina → M, F or U (used for both, or too often for either to guess).
 * Written from naming practice in Argentina (classic names of older generations, the names most
 * given since 2000, and common nicknames); keys are matched folded (accents and case ignored), so
 * only one spelling of each is listed. Names are separated by spaces.
 */
const MALE = `
  aaron abel abraham adan adolfo adrian agustin alan alberto alcides aldo alejandro alejo alex alexander alexis
  alfonso alfredo alvaro amadeo amado americo anibal angel anselmo antonio ariel armando arnaldo arturo augusto
  aurelio axel ayrton baltasar bartolome bastian bautista beltran benicio benito benjamin bernabe bernardo blas
  bruno brian bryan camilo carlos cayetano cesar ceferino christian ciro claudio clemente constantino cristian
  cristobal damian daniel dante dario david delfin demian diego dionisio domingo dylan edgardo eduardo efrain
  eladio elian elias eliseo emanuel emiliano emilio enrique enzo ernesto esteban eugenio eusebio evaristo exequiel
  ezequiel fabian fabio facundo fausto federico felipe felix fermin fernando francesco francisco franco gabriel
  gael gaspar gaston genaro gerardo german geronimo gervasio gilberto gino giovanni giuliano gonzalo gregorio
  guillermo gustavo hector heriberto hernan hilario hipolito horacio hugo ian ignacio iker inti isaac isaias ismael
  isidro ivan ivo jacinto jaime javier jeremias jesus joaquin joel jonas jonatan jonathan jorge jose josue juan
  julian julio justo kevin lautaro lazaro leandro leon leonardo leonel leopoldo liam lian lionel lisandro lorenzo
  lucas luciano lucio luis manuel marcelino marcelo marcial marco marcos mariano mario martin mateo matias matteo
  mauricio mauro maximiliano maximo miguel milton moises nahuel nazareno nehuen nestor nicanor nicolas noel norberto
  octavio omar orlando oscar osvaldo ovidio pablo pascual patricio paulo pedro rafael raimundo ramiro ramon raul
  reinaldo renato renzo ricardo roberto rodolfo rodrigo rogelio rolando roman roque rosendo ruben rufino salvador
  samuel santiago santino santos saul sebastian segundo sergio severino silvio simon tadeo teodoro teofilo thiago
  tiago tiziano tobias tomas ulises uriel valentin valentino valerio vicente victor vito vladimir walter
  wenceslao zacarias
  maxi nico santi fede seba facu nacho pepe tito beto cacho lucho juanchi tincho
`
const FEMALE = `
  abigail abril adela adelina adriana agostina agustina aida ailen ailin aitana alba aldana alejandra alfonsina
  alicia alma amalia amanda ambar amelia amparo ana anabel anahi analia andrea angela angeles angelica antonella
  antonia araceli ariadna ariana aurora ayelen aylen barbara beatriz belen bianca blanca brenda brisa candela
  candelaria carina carla carmen carolina catalina celeste celia celina chiara clara claudia constanza cristina
  dafne daiana dalma daniela dayana debora delfina diana dolores dora edith elena eliana elisa elizabeth elsa
  elvira emilia emma estefania estela esther eugenia eva evangelina fabiana fatima fernanda fiorella flavia
  florencia francisca gabriela gimena gisela giuliana gladys gloria graciela guadalupe guillermina haydee helena
  hilda ines irene irma isabel isabela isabella ivana jacqueline jazmin jesica jessica jimena johana jorgelina
  josefa josefina juana julia juliana julieta karen karina kiara lara laura leticia lidia lila lilia liliana
  lola lorena lourdes lucia luciana lucila lucrecia ludmila luisa lujan luna luz macarena magali magdalena maia
  mailen maite malena marcela margarita maria mariana marianela maribel maricel mariela marina marisa marisol
  marta martina mayra melany melina melisa mercedes mia micaela milagros milena miriam mirta monica mora morena
  nadia nahir natalia nelida nelly nilda noelia nora norma nuria olga olivia paloma pamela patricia paula paz
  pia pilar priscila raquel ramona rebeca regina renata rita rocio romina rosa rosalia rosana rosario ruth
  sabrina salome samanta sandra sara selena serena silvana silvia silvina sofia sol soledad sonia stella susana
  tamara tatiana teresa trinidad uma valentina valeria vanesa vanessa vanina vera veronica victoria violeta
  virginia viviana ximena yamila yanina yesica yolanda zaira zoe zulma
  flor guada caro belu mari vicky majo
`
// Names given to both sexes in Argentina, and nicknames of a male and a female name alike.
const UNISEX = `
  cruz reyes sasha eli dani gabi fran sami juli agus vale pato lu andy akira francis
`

function words(list: string): string[] {
  return list.split(/\s+/).filter((w) => w !== '')
}

export const FIRST_NAMES: readonly (readonly [name: string, gender: 'M' | 'F' | 'U'])[] = [
  ...words(MALE).map((n) => [n, 'M'] as const),
  ...words(FEMALE).map((n) => [n, 'F'] as const),
  ...words(UNISEX).map((n) => [n, 'U'] as const),
]
