/** Reads a JSON object with the suite's own kubectl (`-o json` added by the suite). */
export type KubectlJson = <T>(args: string[]) => Promise<T>;

/** The sandbox token in a bound claim's Secret (written by claim-controller), read as the suite reads everything else. */
export async function claimSecretToken(kJson: KubectlJson, namespace: string, secretName: string): Promise<string> {
  const secret = await kJson<{ data: Record<string, string> }>(['-n', namespace, 'get', 'secret', secretName]);
  return Buffer.from(secret.data.token as string, 'base64').toString();
}
