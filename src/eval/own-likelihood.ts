// A text policy's likelihood of its own actions, read off its trajectories (what `turnwise eval` reports
// for a policy that writes text; docs/methods.md §5): the log-probs each turn's trace carries are those
// the tokens were sampled with (the transformer: π_τ,p of nn/sampling.ts, <|end|> included; an
// `openai:` policy: what the server returned), so no model is run again.
//   NLL per token       = Σ −logprob / Σ tokens over the policy's own turns
//   NLL per trajectory  = mean over trajectories of Σ −logprob over its own turns
// The tokens are those the policy wrote, parsed or not (an invalid output is text the model chose too).
// A turn whose trace has a non-finite log-prob (−∞ is stored as null) is left out with its tokens and
// counted in `infinite.perToken`, its trajectory in `infinite.perTrajectory`. The figures exist when
// every own turn carries log-probs (an `openai:` policy asked for none has no figure).
import type { Trajectory } from '../core/types.ts';

export const OWN_LIKELIHOOD_NOTE =
  "−log π of the tokens the policy wrote, from each turn's trace.logprobs (the log-probs it sampled them with, <|end|> included); means over finite terms, infinite counts the turns (per token) and trajectories (per trajectory) left out";

export interface OwnLikelihood {
  /** tokens: of all the policy's own turns (those left out included). */
  perToken: { nll: number | null; tokens: number; infinite: number };
  perTrajectory: { nll: number | null; trajectories: number; infinite: number };
  note: string;
}

/** The figures one trajectory at a time (a streaming run keeps no trajectories). */
export class OwnLikelihoodCount {
  private nll = 0;
  /** Tokens of the finite turns (the denominator), of all own turns (reported). */
  private tokens = 0;
  private allTokens = 0;
  private turnsLeftOut = 0;
  private trajNll = 0;
  private trajectories = 0;
  private trajLeftOut = 0;
  /** Some own turn had no log-probs: no figure. */
  private missing = false;
  private seen = false;

  add(t: Pick<Trajectory, 'turns'>): void {
    let sum = 0;
    let finite = true;
    for (const turn of t.turns) {
      if (turn.forced === true) continue;
      const lps = turn.trace?.logprobs;
      if (lps === undefined) {
        this.missing = true;
        continue;
      }
      this.seen = true;
      this.allTokens += lps.length;
      let s = 0;
      for (const x of lps) s -= x ?? Number.NEGATIVE_INFINITY;
      if (Number.isFinite(s)) {
        this.nll += s;
        this.tokens += lps.length;
        sum += s;
      } else {
        this.turnsLeftOut++;
        finite = false;
      }
    }
    if (finite) {
      this.trajNll += sum;
      this.trajectories++;
    } else this.trajLeftOut++;
  }

  /** The figures, or undefined when some own turn carried no log-probs or none was seen. */
  result(): OwnLikelihood | undefined {
    if (this.missing || !this.seen) return undefined;
    return {
      perToken: {
        nll: this.tokens > 0 ? this.nll / this.tokens : null,
        tokens: this.allTokens,
        infinite: this.turnsLeftOut,
      },
      perTrajectory: {
        nll: this.trajectories > 0 ? this.trajNll / this.trajectories : null,
        trajectories: this.trajectories + this.trajLeftOut,
        infinite: this.trajLeftOut,
      },
      note: OWN_LIKELIHOOD_NOTE,
    };
  }
}
