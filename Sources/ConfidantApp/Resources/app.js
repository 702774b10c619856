// Confidant app: enhancements only; every page works without this file. Served from 'self'
// under a CSP that forbids inline script and requires Trusted Types for DOM sinks.
'use strict';
(() => {
  // The one Trusted Types policy: the HTML it passes is what the app's own server rendered with
  // Leaf, which escapes every value by default; it arrives over this origin's event stream.
  const policy = window.trustedTypes
    ? window.trustedTypes.createPolicy('confidant', { createHTML: (html) => html })
    : { createHTML: (html) => html };

  const scrollToEnd = (element) => {
    if (element.hasAttribute('data-scroll-end')) window.scrollTo(0, document.body.scrollHeight);
  };

  // Live regions: the server pushes the region's new HTML as a `fragment` event.
  for (const region of document.querySelectorAll('[data-live]')) {
    const source = new EventSource(region.getAttribute('data-live'));
    source.addEventListener('fragment', (event) => {
      region.innerHTML = policy.createHTML(event.data);
      scrollToEnd(region);
    });
    scrollToEnd(region);
  }

  // Chat composer: Enter sends (Shift+Enter is a new line); sent without reloading the page,
  // the message list follows through the live region.
  for (const form of document.querySelectorAll('form[data-enter-submits]')) {
    const draft = form.querySelector('textarea');
    draft.addEventListener('keydown', (event) => {
      if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
        event.preventDefault();
        form.requestSubmit();
      }
    });
    form.addEventListener('submit', async (event) => {
      if (form.querySelector('input[name="confirmKeyChange"]')) return; // a full page: the banner goes
      event.preventDefault();
      const body = new URLSearchParams(new FormData(form));
      const text = draft.value;
      draft.value = '';
      try {
        const response = await fetch(form.action, { method: 'POST', body, headers: { 'Accept': 'application/json' } });
        if (!response.ok) throw new Error(String(response.status));
        const result = await response.json();
        if (result.reload) { draft.value = text; window.location.assign(result.reload); }
      } catch (error) {
        draft.value = text;
        form.submit();
      }
    });
  }

  // A picked picture is previewed before it is sent (a blob: URL of the file, in this page only).
  for (const input of document.querySelectorAll('input[type=file][data-preview]')) {
    const preview = document.getElementById(input.getAttribute('data-preview'));
    input.addEventListener('change', () => {
      const file = input.files && input.files[0];
      if (!preview) return;
      if (file && /^image\/(png|jpeg)$/.test(file.type)) {
        preview.src = URL.createObjectURL(file);
        preview.hidden = false;
      } else {
        preview.hidden = true;
      }
    });
  }

  // The arithmetic step's keypad types into its field.
  for (const keypad of document.querySelectorAll('[data-keypad-for]')) {
    const field = document.getElementById(keypad.getAttribute('data-keypad-for'));
    keypad.addEventListener('click', (event) => {
      const key = event.target.closest('button[data-key]');
      if (!key || !field) return;
      const value = key.getAttribute('data-key');
      field.value = value === 'back' ? field.value.slice(0, -1) : field.value + value;
      field.focus();
    });
  }
})();
