import type { Segment } from '../../../pipelines/features/segments.ts'

/**
 * Recommended actions per RFM segment: `characteristics.recommended_actions` of the RFM
 * response (docs/analytics-rfm-clv-churn.md, "Recommended actions"). Fixed marketing playbook,
 * one to three actions per segment, most important first; the same table for every tenant.
 */
export const SEGMENT_ACTIONS: Readonly<Record<Segment, readonly string[]>> = {
  Champions: ['Reward with loyalty perks and early access', 'Ask for reviews and referrals', 'Upsell premium products'],
  'Loyal Customers': ['Offer membership or loyalty programme upgrades', 'Recommend related products', 'Ask for reviews'],
  'Potential Loyalists': ['Offer a loyalty programme', 'Recommend products based on past purchases', 'Send personalised offers'],
  'Recent Customers': ['Send an onboarding series', 'Offer support after the first purchase', 'Give a second-purchase incentive'],
  Promising: ['Build brand awareness with content', 'Offer free trials or samples', 'Send time-limited offers'],
  'Need Attention': ['Send personalised reactivation offers', 'Recommend based on purchase history', 'Run limited-time promotions'],
  'About to Sleep': ['Share popular products and new arrivals', 'Offer discounts to reconnect', 'Ask what they are looking for'],
  'At Risk': ['Send personalised win-back e-mails', 'Offer renewals or strong discounts', 'Reach out to understand what changed'],
  'Cannot Lose Them': ['Win them back with personal outreach', 'Offer exclusive deals on their favourite products', 'Ask for feedback and act on it'],
  Hibernating: ['Offer other relevant products and special discounts', 'Re-engage with a reactivation campaign', 'Limit spend on this segment'],
  Lost: ['Try a last win-back campaign', 'Otherwise exclude from paid campaigns', 'Ask why they left'],
}
