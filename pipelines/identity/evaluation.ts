/**
 * How well profiles match the truth, pairwise (the standard entity-resolution measure): over every
 * pair of source customers, a pair is predicted when the resolution puts both in one profile and
 * true when they are one person. Precision = correct ÷ predicted pairs, recall = correct ÷ true
 * pairs. Counted from the (person, profile) cells, so it is linear in the customers. Pure.
 */
export interface PairwiseScores {
  customers: number
  true_pairs: number
  predicted_pairs: number
  correct_pairs: number
  /** 1 when nothing was predicted. */
  precision: number
  /** 1 when there is nothing to find. */
  recall: number
  f1: number
}

const pairs = (n: number) => (n * (n - 1)) / 2

export function pairwiseScores(truth: ReadonlyMap<number, number>, predicted: ReadonlyMap<number, number>): PairwiseScores {
  const persons = new Map<number, number>()
  const profiles = new Map<number, number>()
  const cells = new Map<string, number>()
  for (const [customer, person] of truth) {
    const profile = predicted.get(customer) ?? -customer
    persons.set(person, (persons.get(person) ?? 0) + 1)
    profiles.set(profile, (profiles.get(profile) ?? 0) + 1)
    const k = `${person}|${profile}`
    cells.set(k, (cells.get(k) ?? 0) + 1)
  }
  let truePairs = 0
  let predictedPairs = 0
  let correct = 0
  for (const n of persons.values()) truePairs += pairs(n)
  for (const n of profiles.values()) predictedPairs += pairs(n)
  for (const n of cells.values()) correct += pairs(n)
  const precision = predictedPairs ? correct / predictedPairs : 1
  const recall = truePairs ? correct / truePairs : 1
  return { customers: truth.size, true_pairs: truePairs, predicted_pairs: predictedPairs, correct_pairs: correct, precision, recall, f1: precision + recall ? (2 * precision * recall) / (precision + recall) : 0 }
}
