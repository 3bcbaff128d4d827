// Sign-in by e-mailed code: the address, then the six digits. The cookie is set by the answer
// (HttpOnly), so this page never holds anything but what the person typed.
import { useState, type FormEvent } from "react";
import { useMutation } from "@tanstack/react-query";
import { RequestCodeBody, SignInCode, VerifyCodeBody } from "@svc/sdk/contract";
import { api, expectOk, queryClient } from "../api";
import { SESSION_KEY } from "../session";
import { InvalidNote, ProblemNote } from "../ui";

export function SignIn() {
  const [email, setEmail] = useState("");
  const [code, setCode] = useState("");
  const [sentTo, setSentTo] = useState<string | null>(null);
  const [invalid, setInvalid] = useState<string | null>(null);

  const request = useMutation({
    mutationFn: (body: RequestCodeBody) => expectOk(api.auth.requestCode({ body })),
    onSuccess: (_ok, body) => setSentTo(body.email),
  });
  const verify = useMutation({
    mutationFn: (body: VerifyCodeBody) => expectOk(api.auth.verify({ body })),
    onSuccess: (session) => queryClient.setQueryData(SESSION_KEY, session),
  });

  const submitEmail = (e: FormEvent) => {
    e.preventDefault();
    const parsed = RequestCodeBody.safeParse({ email: email.trim() });
    setInvalid(parsed.success ? null : "Enter a valid e-mail address.");
    if (parsed.success) request.mutate(parsed.data);
  };
  const submitCode = (e: FormEvent) => {
    e.preventDefault();
    // The server takes any code (another shape is a wrong code); the page knows the mailed shape.
    const parsed = VerifyCodeBody.safeParse({ email: sentTo, code: code.trim() });
    const shaped = SignInCode.safeParse(code.trim()).success;
    setInvalid(parsed.success && shaped ? null : "The code is the six digits from the e-mail.");
    if (parsed.success && shaped) verify.mutate(parsed.data);
  };

  return (
    <main className="sign-in">
      <h1>Sign in to svc-gateway</h1>
      {sentTo === null ? (
        <form onSubmit={submitEmail} noValidate>
          <label htmlFor="email">E-mail address</label>
          <input id="email" type="email" autoComplete="email" required value={email} onChange={(e) => setEmail(e.target.value)} />
          <button type="submit" disabled={request.isPending}>
            Send me a code
          </button>
        </form>
      ) : (
        <form onSubmit={submitCode} noValidate>
          <p role="status">We sent a six-digit code to {sentTo}. It is valid for a few minutes.</p>
          <label htmlFor="code">Sign-in code</label>
          <input id="code" inputMode="numeric" autoComplete="one-time-code" maxLength={6} required value={code} onChange={(e) => setCode(e.target.value)} />
          <button type="submit" disabled={verify.isPending}>
            Sign in
          </button>
          <button type="button" className="link" onClick={() => setSentTo(null)}>
            Use another address
          </button>
        </form>
      )}
      <InvalidNote message={invalid} />
      <ProblemNote error={request.error ?? verify.error} />
    </main>
  );
}
