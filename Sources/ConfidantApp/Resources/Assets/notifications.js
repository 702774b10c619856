// Confidant app: browser notifications for messages that arrive while the app's tab is in the
// background. Asked for by the settings page's button, never on load; the choices are kept in
// this browser (localStorage). The text is shown only with "show text" on; nothing is shown while
// the tab is visible. Served from 'self' like app.js.
'use strict';
(() => {
  const prefs = {
    get on() { return localStorage.getItem('confidant.notifications') === 'on'; },
    set on(value) { localStorage.setItem('confidant.notifications', value ? 'on' : 'off'); },
    get text() { return localStorage.getItem('confidant.notifications.text') === 'on'; },
    set text(value) { localStorage.setItem('confidant.notifications.text', value ? 'on' : 'off'); },
    get sound() { return localStorage.getItem('confidant.notifications.sound') === 'on'; },
    set sound(value) { localStorage.setItem('confidant.notifications.sound', value ? 'on' : 'off'); },
  };
  const supported = 'Notification' in window;

  // A short tone, made here: the app loads no sound file.
  const chime = () => {
    const Context = window.AudioContext || window.webkitAudioContext;
    if (!Context) return;
    const audio = new Context();
    const tone = audio.createOscillator();
    const gain = audio.createGain();
    tone.frequency.value = 880;
    gain.gain.setValueAtTime(0.15, audio.currentTime);
    gain.gain.exponentialRampToValueAtTime(0.001, audio.currentTime + 0.3);
    tone.connect(gain).connect(audio.destination);
    tone.start();
    tone.stop(audio.currentTime + 0.3);
    tone.onended = () => audio.close();
  };

  let source = null;
  const listen = () => {
    const url = document.body.getAttribute('data-notifications');
    if (source || !url || !supported || !prefs.on || Notification.permission !== 'granted') return;
    source = new EventSource(url);
    source.addEventListener('arrival', (event) => {
      if (document.visibilityState === 'visible') return;
      let arrival;
      try { arrival = JSON.parse(event.data); } catch (error) { return; }
      const shown = new Notification(arrival.name, {
        body: prefs.text ? arrival.text : 'New message', tag: arrival.conversation, silent: !prefs.sound,
      });
      shown.onclick = () => { window.focus(); window.location.assign(arrival.chat); shown.close(); };
      if (prefs.sound) chime();
    });
  };
  const stop = () => { if (source) source.close(); source = null; };

  // The settings page's section: shown only where the browser can notify.
  const section = document.getElementById('notifications');
  if (section && supported) {
    section.hidden = false;
    const state = document.getElementById('notifications-state');
    const toggle = document.getElementById('notifications-toggle');
    const text = document.getElementById('notifications-text');
    const sound = document.getElementById('notifications-sound');
    const show = () => {
      const blocked = Notification.permission === 'denied';
      const on = prefs.on && Notification.permission === 'granted';
      state.textContent = blocked ? 'This browser blocks notifications from the app; allow them in its site settings.'
        : on ? 'Notifications are on: messages that arrive while this tab is in the background are shown.'
        : 'Notifications are off.';
      toggle.textContent = on ? 'Turn notifications off' : 'Turn notifications on';
      toggle.disabled = blocked;
      text.checked = prefs.text;
      sound.checked = prefs.sound;
      text.disabled = sound.disabled = !on;
    };
    toggle.addEventListener('click', async () => {
      if (prefs.on && Notification.permission === 'granted') {
        prefs.on = false;
        stop();
      } else {
        const permission = await Notification.requestPermission();
        prefs.on = permission === 'granted';
        listen();
      }
      show();
    });
    text.addEventListener('change', () => { prefs.text = text.checked; });
    sound.addEventListener('change', () => { prefs.sound = sound.checked; });
    show();
  }
  listen();
})();
