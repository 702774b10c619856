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

  // The title counts unread messages, "(3) Chats · Confidant", as a live region reports them.
  const baseTitle = document.title.replace(/^\(\d+\) /, '');
  const showUnread = (region) => {
    const total = region.querySelector('[data-unread-total]');
    if (!total) return;
    const count = parseInt(total.getAttribute('data-unread-total'), 10) || 0;
    document.title = count > 0 ? `(${count}) ${baseTitle}` : baseTitle;
  };

  // Live regions: the server pushes the region's new HTML as a `fragment` event.
  for (const region of document.querySelectorAll('[data-live]')) {
    const source = new EventSource(region.getAttribute('data-live'));
    source.addEventListener('fragment', (event) => {
      region.innerHTML = policy.createHTML(event.data);
      showUnread(region);
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

  // Uploads with a progress bar: the form goes by XMLHttpRequest (fetch reports no upload
  // progress); a refusal is shown in the form, success goes to the page the server names.
  for (const form of document.querySelectorAll('form[data-upload-progress]')) {
    const box = document.getElementById(form.getAttribute('data-upload-progress'));
    const bar = box && box.querySelector('progress');
    const text = box && box.querySelector('.progress-text');
    const problem = form.querySelector('.upload-error');
    const button = form.querySelector('button[type=submit]');
    form.addEventListener('submit', (event) => {
      if (!box || !window.XMLHttpRequest) return;
      event.preventDefault();
      const request = new XMLHttpRequest();
      request.open('POST', form.action);
      request.setRequestHeader('Accept', 'application/json');
      request.responseType = 'json';
      request.upload.addEventListener('progress', (progress) => {
        if (!progress.lengthComputable) return;
        const percent = Math.round((100 * progress.loaded) / progress.total);
        bar.value = percent;
        text.textContent = percent < 100 ? `Uploading: ${percent} %` : 'Encrypting into the vault…';
      });
      const fail = (message) => {
        box.hidden = true;
        button.disabled = false;
        if (problem) { problem.textContent = message; problem.hidden = false; }
      };
      request.addEventListener('load', () => {
        const answer = request.response || {};
        if (request.status >= 200 && request.status < 300 && answer.location) {
          window.location.assign(answer.location);
        } else {
          fail(answer.error || answer.reason || `The upload was refused (${request.status}).`);
        }
      });
      request.addEventListener('error', () => fail('The upload did not reach the app. Is it still running?'));
      if (problem) problem.hidden = true;
      box.hidden = false;
      bar.value = 0;
      text.textContent = 'Uploading: 0 %';
      button.disabled = true;
      request.send(new FormData(form));
    });
  }

  // The photo viewer: arrow keys for the previous and next photo, Escape back to the vault.
  if (document.querySelector('[data-viewer]')) {
    document.addEventListener('keydown', (event) => {
      if (event.altKey || event.ctrlKey || event.metaKey) return;
      const target = { ArrowLeft: '[data-key-left]', ArrowRight: '[data-key-right]', Escape: '[data-key-escape]' }[event.key];
      const link = target && document.querySelector(target);
      if (link) { event.preventDefault(); window.location.assign(link.href); }
    });
  }

  // "Send the code again" waits out the server's cool-down, counting down beside the button
  // (without this script the server says how long to wait).
  for (const button of document.querySelectorAll('button[data-wait-seconds]')) {
    let left = parseInt(button.getAttribute('data-wait-seconds'), 10) || 0;
    const label = button.parentElement.querySelector('.countdown');
    const tick = () => {
      if (left <= 0) { button.disabled = false; if (label) label.textContent = ''; return; }
      button.disabled = true;
      if (label) label.textContent = `You can ask for a new code in ${left} s.`;
      left -= 1;
      window.setTimeout(tick, 1000);
    };
    tick();
  }
})();
